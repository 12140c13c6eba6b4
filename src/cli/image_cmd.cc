// llm-sandbox image import|ls|inspect|rm|prune: the image store (docs/images.md). `image pull` is
// the registry client's (image_pull_cmd.cc).
#include <sys/stat.h>

#include <cstdio>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "image/image_fs.h"
#include "image/layout_refs.h"
#include "image/store.h"
#include "policy/units.h"
#include "runtime/build_plan.h"
#include "runtime/native/env_builder.h"

namespace lsb::cli {
namespace {

using nlohmann::json;

constexpr const char* kUsage =
    "usage: llm-sandbox image import [--store DIR] [--name REF] FILE|DIR\n"
    "       llm-sandbox image create --name REF [--store DIR] ROOTFS_DIR|ROOTFS.tar (see image create --help)\n"
    "       llm-sandbox image ls [--store DIR] [--json]\n"
    "       llm-sandbox image inspect [--store DIR] [--json] REF\n"
    "       llm-sandbox image rm [--store DIR] REF...\n"
    "       llm-sandbox image prune [--store DIR]\n"
    "       llm-sandbox image ls|prune --docker [--json]\n"
    "       llm-sandbox image inspect --docker [--json] REF\n"
    "\n"
    "  import    load a `docker save` archive (FILE) or an OCI image layout (DIR, as\n"
    "            `skopeo copy ... oci:DIR:NAME:TAG` makes); without --name, each image under the\n"
    "            name it carries (RepoTags; the layout's ref.name), which must be a full name\n"
    "  create    make an image from a root filesystem directory or tarball, offline\n"
    "  ls        stored images: name, digest, size, created\n"
    "  inspect   digest, size, platform, layers, config, and the interpreters the image has\n"
    "  rm        remove images, then the layers no other image uses\n"
    "  prune     remove unreferenced blobs and layers and what killed imports left behind\n"
    "  --docker  ls/prune the Docker engine's images that container.build made (label\n"
    "            io.llm-sandbox.build) instead of the store's; inspect one engine image (a built\n"
    "            one: its policy, Python version, packages and build.apt packages)\n"
    "\n"
    "The store is --store DIR, else $LLM_SANDBOX_IMAGE_STORE, else <state dir>/images\n"
    "($LLM_SANDBOX_STATE_DIR, /var/lib/llm-sandbox for root, ~/.local/state/llm-sandbox);\n"
    "--max-store-bytes SIZE (or $LLM_SANDBOX_IMAGE_STORE_MAX) bounds its size (default 20G; 0: none):\n"
    "past it, import and prune evict the least recently used images no running box uses.\n"
    "rm refuses an image a running box uses. Exit 0 on success, 1 on failure, 2 on bad usage.\n";

int Usage(const std::string& problem) {
  std::fprintf(stderr, "llm-sandbox image: %s\n\n%s", problem.c_str(), kUsage);
  return 2;
}

int Fail(const Error& e) {
  std::fprintf(stderr, "llm-sandbox image: %s\n", e.message.c_str());
  return 1;
}

struct Options {
  std::string store, name, max_bytes;
  bool json = false;
  std::vector<std::string> positional;
};

// Parses the options every subcommand shares; returns an exit code when it must stop.
std::optional<int> ParseOptions(const Args& args, bool allow_name, bool allow_json, Options* o) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if ((a == "--store" || (allow_name && a == "--name")) && i + 1 < args.size()) {
      (a == "--store" ? o->store : o->name) = args[++i];
    } else if (a == "--max-store-bytes" && i + 1 < args.size()) {
      o->max_bytes = args[++i];
    } else if (a.rfind("--max-store-bytes=", 0) == 0) {
      o->max_bytes = a.substr(18);
    } else if (a.rfind("--store=", 0) == 0) {
      o->store = a.substr(8);
    } else if (allow_name && a.rfind("--name=", 0) == 0) {
      o->name = a.substr(7);
    } else if (allow_json && a == "--json") {
      o->json = true;
    } else if (a.size() > 1 && a[0] == '-') {
      return Usage("unknown option '" + a + "'");
    } else {
      o->positional.push_back(a);
    }
  }
  return std::nullopt;
}

Result<std::unique_ptr<image::Store>> OpenStore(const Options& o) {
  image::StoreOptions so;
  so.root = o.store.empty() ? image::DefaultStoreDir() : o.store;
  LSB_ASSIGN_OR_RETURN(so.max_bytes, image::StoreMaxBytes(o.max_bytes));
  return image::Store::Open(std::move(so));
}

std::string Short(const std::string& digest) { return digest.substr(0, 7 + 12); }

std::string Familiar(const std::string& canonical) {
  auto ref = image::ParseImageReference(canonical);
  return ref.ok() ? ref->Familiar() : canonical;
}

int Import(const Args& args) {
  Options o;
  if (auto rc = ParseOptions(args, true, false, &o)) return *rc;
  if (o.positional.size() != 1) return Usage("import takes one FILE (docker save) or DIR (OCI layout)");
  std::optional<image::ImageReference> name;
  if (!o.name.empty()) {
    auto ref = image::ParseImageReference(o.name);
    if (!ref.ok()) return Usage(ref.error().message);
    name = *ref;
  }
  auto store = OpenStore(o);
  if (!store.ok()) return Fail(store.error());
  const std::string& src = o.positional[0];
  struct stat st {};
  if (::stat(src.c_str(), &st) != 0) return Fail(Error::FromErrno("import " + src));
  std::vector<image::ImageRoot> roots;
  if (S_ISDIR(st.st_mode)) {
    // Without --name, each image under the name the layout gives it (layout_refs.h).
    std::vector<image::ImageReference> names;
    if (name) {
      names.push_back(*name);
    } else {
      auto refs = image::LayoutReferences(src, (*store)->limits());
      if (!refs.ok() && refs.error().field == "name") return Usage(refs.error().message);
      if (!refs.ok()) return Fail(refs.error());
      names = std::move(refs).value();
    }
    for (const auto& n : names) {
      auto r = (*store)->ImportOciLayout(src, n);
      if (!r.ok()) return Fail(r.error());
      roots.push_back(std::move(r).value());
    }
  } else {
    auto r = (*store)->ImportDockerArchive(src, name);
    if (!r.ok()) return Fail(r.error());
    roots = std::move(r).value();
  }
  for (const auto& r : roots)
    std::printf("imported %s (%s, %zu layers)\n", Familiar(r.reference).c_str(), r.manifest_digest.c_str(), r.layers.size());
  return 0;
}

int List(const Args& args) {
  Options o;
  if (auto rc = ParseOptions(args, false, true, &o)) return *rc;
  if (!o.positional.empty()) return Usage("ls takes no arguments");
  auto store = OpenStore(o);
  if (!store.ok()) return Fail(store.error());
  auto entries = (*store)->List();
  if (!entries.ok()) return Fail(entries.error());
  json out = json::array();
  if (!o.json) std::printf("%-40s %-20s %10s  %-19s  %s\n", "NAME", "DIGEST", "SIZE", "CREATED", "POLICY");
  for (const auto& e : *entries) {
    auto ref = image::ParseImageReference(e.reference);
    image::ImageInfo info;
    if (ref.ok()) {
      auto i = (*store)->Inspect(*ref);
      if (i.ok()) info = std::move(i).value();
    }
    // A derived image (container.build) says which policy it was built for.
    auto record = native::ReadBuildRecord((*store)->root(), e.reference);
    std::string policy = record.ok() ? record->policy : "";
    if (o.json) {
      out.push_back({{"name", Familiar(e.reference)}, {"reference", e.reference}, {"digest", e.manifest_digest},
                     {"size", info.unpacked_bytes}, {"compressed_size", info.compressed_bytes},
                     {"created", info.created}, {"imported", e.imported},
                     {"platform", e.os + "/" + e.architecture}, {"policy", policy}});
    } else {
      std::printf("%-40s %-20s %10s  %-19s  %s\n", Familiar(e.reference).c_str(), Short(e.manifest_digest).c_str(),
                  units::FormatBytes(info.unpacked_bytes).c_str(), info.created.substr(0, 19).c_str(),
                  policy.empty() ? "-" : policy.c_str());
    }
  }
  if (o.json) std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

std::string OsRelease(const std::vector<std::string>& layers) {
  auto text = image::ReadImageFile(layers, "/etc/os-release", 64 << 10);
  if (!text.ok()) return "";
  size_t pos = text->find("PRETTY_NAME=");
  if (pos == std::string::npos) return "";
  std::string v = text->substr(pos + 12, text->find('\n', pos) - pos - 12);
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
  return v;
}

int Inspect(const Args& args) {
  Options o;
  if (auto rc = ParseOptions(args, false, true, &o)) return *rc;
  if (o.positional.size() != 1) return Usage("inspect takes one image reference");
  auto ref = image::ParseImageReference(o.positional[0]);
  if (!ref.ok()) return Usage(ref.error().message);
  auto store = OpenStore(o);
  if (!store.ok()) return Fail(store.error());
  auto info = (*store)->Inspect(*ref);
  if (!info.ok()) return Fail(info.error());
  auto root = (*store)->Resolve(*ref);
  if (!root.ok()) return Fail(root.error());
  auto interpreters = image::FindInterpreters(*root);
  std::string os_release = OsRelease(root->layers);
  const auto& c = info->config;
  json layers = json::array();
  for (const auto& l : info->layers)
    layers.push_back({{"digest", l.blob_digest}, {"diff_id", l.diff_id}, {"media_type", l.media_type},
                      {"compressed_size", l.compressed_bytes}, {"size", l.unpacked_bytes}, {"entries", l.entries},
                      {"dir", l.dir}});
  json interp = json::object();
  for (const auto& [name, f] : interpreters) interp[name] = {{"path", f.image_path}, {"resolved", f.resolved}};
  json out = {{"name", Familiar(info->entry.reference)},
              {"reference", info->entry.reference},
              {"digest", info->entry.manifest_digest},
              {"config_digest", info->config_digest},
              {"created", info->created},
              {"imported", info->entry.imported},
              {"platform", c.os + "/" + c.architecture},
              {"size", info->unpacked_bytes},
              {"compressed_size", info->compressed_bytes},
              {"os_release", os_release},
              {"config", {{"env", c.env}, {"entrypoint", c.entrypoint}, {"cmd", c.cmd}, {"working_dir", c.working_dir},
                          {"user", c.user}}},
              {"layers", layers},
              {"interpreters", interp}};
  // A derived image (container.build): what it was built from and what its python has.
  auto record = native::ReadBuildRecord((*store)->root(), info->entry.reference);
  if (record.ok()) {
    out["build"] = {{"apt", NameVersionObjects(record->apt)},
                    {"policy", record->policy}, {"source_file", record->source_file}, {"base", record->base},
                    {"base_digest", record->base_digest}, {"steps", record->steps}, {"python", record->python},
                    {"packages", NameVersionObjects(record->packages)}};
  }
  if (o.json) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("name:         %s\nreference:    %s\ndigest:       %s\nplatform:     %s/%s\ncreated:      %s\n",
              Familiar(info->entry.reference).c_str(), info->entry.reference.c_str(),
              info->entry.manifest_digest.c_str(), c.os.c_str(), c.architecture.c_str(), info->created.c_str());
  std::printf("size:         %s (%s compressed)\n", units::FormatBytes(info->unpacked_bytes).c_str(),
              units::FormatBytes(info->compressed_bytes).c_str());
  if (!os_release.empty()) std::printf("os-release:   %s\n", os_release.c_str());
  std::printf("workdir:      %s\n", c.working_dir.empty() ? "(not set)" : c.working_dir.c_str());
  std::printf("entrypoint:   %s\ncmd:          %s\n", json(c.entrypoint).dump().c_str(), json(c.cmd).dump().c_str());
  std::printf("env:\n");
  for (const auto& e : c.env) std::printf("  %s\n", e.c_str());
  std::printf("interpreters:\n");
  if (interpreters.empty()) std::printf("  (none of python3, node, bash, sh on its PATH)\n");
  for (const auto& [name, f] : interpreters)
    std::printf("  %-8s %s%s\n", name.c_str(), f.image_path.c_str(),
                f.resolved == f.image_path ? "" : (" -> " + f.resolved).c_str());
  if (record.ok()) {
    std::printf("built for:    policy %s (%s) on %s\n", record->policy.c_str(), record->source_file.c_str(),
                record->base.c_str());
    for (const auto& step : record->steps) std::printf("  step: %s\n", step.c_str());
    std::printf("python:       %s\npackages:\n", record->python.empty() ? "(unknown)" : record->python.c_str());
    for (const auto& [name, version] : record->packages) std::printf("  %s %s\n", name.c_str(), version.c_str());
    if (!record->apt.empty()) std::printf("apt packages:\n");
    for (const auto& [name, version] : record->apt) std::printf("  %s %s\n", name.c_str(), version.c_str());
  }
  std::printf("layers:\n");
  for (const auto& l : info->layers)
    std::printf("  %s  %10s  (%s compressed)\n", Short(l.diff_id).c_str(), units::FormatBytes(l.unpacked_bytes).c_str(),
                units::FormatBytes(l.compressed_bytes).c_str());
  return 0;
}

void PrintReport(const image::PruneReport& r) {
  std::printf("removed %d blobs, %d layers, %d leftover temp dirs; freed %s\n", r.blobs_removed, r.layers_removed,
              r.temp_removed, units::FormatBytes(r.bytes_freed).c_str());
  if (r.images_evicted) std::printf("evicted %d images over the store's size bound\n", r.images_evicted);
}

int Remove(const Args& args) {
  Options o;
  if (auto rc = ParseOptions(args, false, false, &o)) return *rc;
  if (o.positional.empty()) return Usage("rm takes at least one image reference");
  auto store = OpenStore(o);
  if (!store.ok()) return Fail(store.error());
  int status = 0;
  for (const auto& text : o.positional) {
    auto ref = image::ParseImageReference(text);
    if (!ref.ok()) return Usage(ref.error().message);
    auto r = (*store)->Remove(*ref);
    if (!r.ok()) {
      std::fprintf(stderr, "llm-sandbox image: %s\n", r.error().message.c_str());
      status = 1;
      continue;
    }
    std::printf("removed %s\n", ref->Familiar().c_str());
    PrintReport(*r);
  }
  return status;
}

int Prune(const Args& args) {
  Options o;
  if (auto rc = ParseOptions(args, false, false, &o)) return *rc;
  if (!o.positional.empty()) return Usage("prune takes no arguments");
  auto store = OpenStore(o);
  if (!store.ok()) return Fail(store.error());
  auto r = (*store)->Prune();
  if (!r.ok()) return Fail(r.error());
  PrintReport(*r);
  return 0;
}

}  // namespace

int ImageCommand(const Args& args) {
  if (args.empty()) return Usage("missing subcommand");
  const std::string& sub = args[0];
  Args rest(args.begin() + 1, args.end());
  if (sub == "--help" || sub == "-h" || sub == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  bool docker = false, as_json = false;
  for (const auto& a : rest) docker = docker || a == "--docker", as_json = as_json || a == "--json";
  if (docker && (sub == "ls" || sub == "list" || sub == "prune")) return ImageDockerCommand(sub == "prune" ? "prune" : "ls", as_json);
  if (docker && sub == "inspect") {
    std::vector<std::string> refs;
    for (const auto& a : rest)
      if (a != "--docker" && a != "--json") refs.push_back(a);
    if (refs.size() != 1 || refs[0].empty() || refs[0][0] == '-')
      return Usage("inspect --docker takes one image reference");
    return ImageDockerInspect(refs[0], as_json);
  }
  if (sub == "import") return Import(rest);
  if (sub == "ls" || sub == "list") return List(rest);
  if (sub == "inspect") return Inspect(rest);
  if (sub == "rm" || sub == "remove") return Remove(rest);
  if (sub == "prune") return Prune(rest);
  return Usage("unknown subcommand '" + sub + "'");
}

}  // namespace lsb::cli
