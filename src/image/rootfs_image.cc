#include "image/rootfs_image.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>

#include <nlohmann/json.hpp>

#include "base/sha256.h"
#include "base/time_format.h"
#include "base/unique_fd.h"
#include "image/layer_unpack.h"
#include "image/layer_writer.h"
#include "image/safe_fs.h"

namespace lsb::image {
namespace {

using nlohmann::json;

constexpr const char* kDefaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// A new blob `data` in the layout's blobs/sha256; its digest.
Result<std::string> PutBlob(int blobs_dir, const std::string& data) {
  const std::string hex = Hex(Sha256(data));
  LSB_TRY(WriteFileAtomic(blobs_dir, hex, data));
  return "sha256:" + hex;
}

std::string ConfigJson(const std::string& diff_id, const RootfsImageOptions& o, const std::string& source) {
  const std::string now = Rfc3339(std::chrono::system_clock::now());
  std::vector<std::string> env = o.env;
  bool has_path = false;
  for (const auto& e : env) has_path = has_path || e.rfind("PATH=", 0) == 0;
  if (!has_path) env.insert(env.begin(), kDefaultPath);
  json config = {{"Env", env}};
  if (!o.workdir.empty()) config["WorkingDir"] = o.workdir;
  if (!o.cmd.empty()) config["Cmd"] = o.cmd;
  return json{{"architecture", HostArchitecture()},
              {"os", "linux"},
              {"created", now},
              {"config", config},
              {"rootfs", {{"type", "layers"}, {"diff_ids", json::array({diff_id})}}},
              {"history", json::array({{{"created", now}, {"created_by", "llm-sandbox image create " + source}}})}}
      .dump();
}

// The layout around the layer at `layout`/blobs/sha256/<diff hex>: config, manifest, index, oci-layout.
Status WriteLayout(int layout_fd, int blobs_fd, const std::string& diff_id, uint64_t layer_size,
                   const ImageReference& name, const RootfsImageOptions& o, const std::string& source) {
  const std::string config = ConfigJson(diff_id, o, source);
  LSB_ASSIGN_OR_RETURN(std::string config_digest, PutBlob(blobs_fd, config));
  const std::string manifest =
      json{{"schemaVersion", 2},
           {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
           {"config", {{"mediaType", "application/vnd.oci.image.config.v1+json"},
                       {"digest", config_digest}, {"size", config.size()}}},
           {"layers", json::array({{{"mediaType", "application/vnd.oci.image.layer.v1.tar"},
                                    {"digest", diff_id}, {"size", layer_size}}})}}
          .dump();
  LSB_ASSIGN_OR_RETURN(std::string manifest_digest, PutBlob(blobs_fd, manifest));
  const json index = {{"schemaVersion", 2},
                      {"manifests", json::array({{{"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                                                  {"digest", manifest_digest},
                                                  {"size", manifest.size()},
                                                  {"annotations", {{"org.opencontainers.image.ref.name",
                                                                    name.Canonical()}}}}})}};
  LSB_TRY(WriteFileAtomic(layout_fd, "index.json", index.dump()));
  return WriteFileAtomic(layout_fd, "oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
}

// The tree below `tree_fd` as the one layer of an OCI layout in `work`/layout.
Status LayoutFromTree(int tree_fd, const TempDir& work, const ImageReference& name, const RootfsImageOptions& o,
                      const std::string& source) {
  LSB_ASSIGN_OR_RETURN(UniqueFd layout, OpenDirBeneath(work.fd(), {"layout"}, 1, true));
  LSB_ASSIGN_OR_RETURN(UniqueFd blobs, OpenDirBeneath(layout.get(), {"blobs", "sha256"}, 2, true));
  UniqueFd out(::openat(work.fd(), "layer.tar", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!out) return Error::FromErrno("create the layer in " + work.path());
  LayerTarWriter writer(out.get(), LayerWriteLimits{});
  if (auto st = writer.AddTree(tree_fd, "", /*overlay_upper=*/false, /*refuse_symlinks=*/false); !st.ok())
    return st.error().Wrap("the root filesystem " + source);
  LSB_ASSIGN_OR_RETURN(std::string diff_id, writer.Finish());
  const uint64_t size = writer.bytes();
  out.reset();
  // An uncompressed layer: its blob digest is its diff_id.
  if (::renameat(work.fd(), "layer.tar", blobs.get(), diff_id.substr(7).c_str()) != 0)
    return Error::FromErrno("move the layer into the layout");
  return WriteLayout(layout.get(), blobs.get(), diff_id, size, name, o, source);
}

// A tarball unpacked into `work`/rootfs by the store's unpacker; the tree's fd.
Result<UniqueFd> UnpackTarball(const std::string& path, const TempDir& work, const UnpackLimits& limits) {
  UniqueFd tar(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!tar) return Error::FromErrno("open the rootfs tarball " + path);
  LSB_ASSIGN_OR_RETURN(UniqueFd tree, OpenDirBeneath(work.fd(), {"rootfs"}, 1, true));
  auto stats = UnpackLayer(tar.get(), tree.get(), limits);
  if (!stats.ok()) return stats.error().Wrap("the rootfs tarball " + path);
  if (stats->entries == 0)
    return Error{ErrorCode::kInvalidArgument, "the rootfs tarball " + path + " holds no files"};
  return tree;
}

}  // namespace

Result<ImageRoot> CreateImageFromRootfs(Store& store, const std::string& source, const ImageReference& name,
                                        const RootfsImageOptions& options) {
  struct stat st {};
  if (::stat(source.c_str(), &st) != 0) return Error::FromErrno("image create: " + source);
  if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
    return Error{ErrorCode::kInvalidArgument,
                 "image create: " + source +
                     " is neither a directory (a root filesystem) nor a file (a tarball of one)"};
  if (!options.workdir.empty() && options.workdir[0] != '/')
    return Error{ErrorCode::kInvalidArgument, "image create: --workdir " + options.workdir + " must be absolute",
                 "workdir"};
  LSB_ASSIGN_OR_RETURN(TempDir work, store.NewTempDir("rootfs"));
  UniqueFd tree;
  if (S_ISDIR(st.st_mode)) {
    tree.reset(::open(source.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!tree) return Error::FromErrno("image create: open " + source);
  } else {
    LSB_ASSIGN_OR_RETURN(tree, UnpackTarball(source, work, store.limits().unpack));
  }
  if (auto s = LayoutFromTree(tree.get(), work, name, options, source); !s.ok()) return s.error().Wrap("image create");
  tree.reset();
  auto root = store.ImportOciLayout(work.path() + "/layout", name);
  if (!root.ok()) return root.error().Wrap("image create " + name.Familiar());
  return root;
}

}  // namespace lsb::image
