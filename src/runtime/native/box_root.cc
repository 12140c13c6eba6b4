#include "runtime/native/box_root.h"

#include <sys/stat.h>

namespace lsb::native {
namespace {

std::string ImageHow(const std::string& image, const std::string& looked_up, const image::ImageRoot& root) {
  std::string how = "'" + image + "' -> " + (looked_up == image ? "" : "alias of '" + looked_up + "' -> ") +
                    "the image store: " + root.reference + " " + root.manifest_digest + ", " +
                    std::to_string(root.layers.size()) + " layer(s) as a read-only overlay";
  return how;
}

// The error when nothing has the image: what was searched and how to get it.
Error NotFound(const std::string& image, const std::string& looked_up,
               const RootSources& sources, const std::string& detail) {
  std::string msg = "container.image '" + image + "'" +
                    (looked_up == image ? "" : " (an alias of '" + looked_up + "' in " + sources.map.source() + ")") +
                    " is not in the image map (searched: " + sources.map.searched() + ")";
  msg += sources.store ? " nor in the image store" : " and there is no image store here";
  if (!detail.empty()) msg += " (" + detail + ")";
  msg += ". Fetch it with `llm-sandbox image pull " + looked_up + "` (or load it without a registry: " +
         "`llm-sandbox image import FILE`), or map it under 'images:' in the image map, e.g. \"" + image +
         "\": host";
  return Error{ErrorCode::kNotFound, msg, "container.image"};
}

// A pull that failed: the same account of what was searched (a user whose image map lacks the
// name learns that here, not from a DNS error), with the pull's own error and kind.
Error PullFailed(const std::string& image, const std::string& looked_up, const RootSources& sources,
                 const std::string& pull, const Error& why) {
  Error e = NotFound(image, looked_up, sources, "container.pull: " + pull + ", and pulling it failed: " + why.message);
  e.code = why.code;
  return e;
}

}  // namespace

Result<BoxRoot> ResolveBoxRoot(const std::string& image, const std::string& pull, const RootSources& sources,
                               bool may_pull) {
  if (pull != "missing" && pull != "always" && pull != "never")
    return Error::InvalidArgument("container.pull", "container.pull must be missing, always or never, not '" + pull + "'");
  // 1. The image map.
  std::string looked_up = image;
  if (auto entry = sources.map.Find(image)) {
    if (entry->kind == ImageMap::Entry::Kind::kHost)
      return BoxRoot{"host", std::nullopt, false, "'" + image + "' -> the host's system directories, read-only" +
                                                      (sources.map.source().empty() ? "" : " (" + sources.map.source() + ")")};
    if (entry->kind == ImageMap::Entry::Kind::kDirectory) {
      LSB_ASSIGN_OR_RETURN(std::string dir, sources.map.Resolve(image));  // checks it is a directory
      return BoxRoot{dir, std::nullopt, false, "'" + image + "' -> rootfs " + dir + " (" + sources.map.source() + ")"};
    }
    if (entry->kind == ImageMap::Entry::Kind::kLayers) {
      std::string how = "'" + image + "' -> " + std::to_string(entry->layers.layers.size()) +
                        " layer(s) from " + sources.map.source() + " as a read-only overlay";
      return BoxRoot{"image", entry->layers, false, how};
    }
    looked_up = entry->value;  // an alias: the store, under its target's name
  }
  // 2. The image store.
  auto ref = image::ParseImageReference(looked_up);
  if (!ref.ok()) return NotFound(image, looked_up, sources, "not an image reference: " + ref.error().message);
  if (!sources.store) return NotFound(image, looked_up, sources, "");
  const bool pull_first = pull == "always";
  if (pull_first && may_pull) {
    if (!sources.puller)
      return NotFound(image, looked_up, sources, "container.pull: always, but no registry client is configured here");
    auto pulled = sources.puller->Pull(*ref);
    if (!pulled.ok()) return PullFailed(image, looked_up, sources, pull, pulled.error());
  }
  auto stored = sources.store->Resolve(*ref);
  if (stored.ok()) {
    std::string how = ImageHow(image, looked_up, *stored);  // before the move below
    return BoxRoot{"image", std::move(*stored), false, std::move(how)};
  }
  if (!stored.error().IsNotFound()) return stored.error().Wrap("container.image '" + image + "': the image store");
  // 3. Not stored: container.pull.
  if (pull == "never") return NotFound(image, looked_up, sources, "container.pull: never, so it is not pulled");
  if (!sources.puller) return NotFound(image, looked_up, sources, "");
  if (!may_pull)
    return BoxRoot{"image", std::nullopt, true,
                   "'" + image + "' -> not stored yet: " + ref->Familiar() + " is pulled when a box first needs it (container.pull: " +
                       pull + ")"};
  if (!pull_first) {
    auto pulled = sources.puller->Pull(*ref);
    if (!pulled.ok()) return PullFailed(image, looked_up, sources, pull, pulled.error());
  }
  auto after = sources.store->Resolve(*ref);
  if (!after.ok()) return after.error().Wrap("container.image '" + image + "': after pulling " + ref->Familiar());
  std::string how = ImageHow(image, looked_up, *after);
  return BoxRoot{"image", std::move(*after), false, std::move(how)};
}

}  // namespace lsb::native
