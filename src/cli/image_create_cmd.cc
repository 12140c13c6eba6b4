// llm-sandbox image create: an image from a root filesystem (a directory or a tarball of one),
// with no registry, Docker or skopeo (issue 37; image/rootfs_image.h).
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "cli/option_cursor.h"
#include "image/rootfs_image.h"
#include "image/store.h"

namespace lsb::cli {
namespace {

constexpr const char* kUsage =
    "usage: llm-sandbox image create --name REF [--store DIR] [--env KEY=VALUE]... [--workdir DIR]\n"
    "                                [--cmd ARG]... ROOTFS_DIR|ROOTFS.tar[.gz|.zst]\n"
    "\n"
    "Makes the image REF in the store from a root filesystem, offline: a directory (a debootstrap\n"
    "rootfs, a chroot) or a tarball of one (`tar -C rootfs -c .`, `docker export`). The tree becomes\n"
    "one layer: owners 0:0, setuid/setgid bits dropped, device nodes left out (a box gets its /dev\n"
    "from the runtime), symlinks kept as they are; a tarball is unpacked first by the store's own\n"
    "unpacker, which refuses '..', absolute names and entries past its bounds (docs/images.md).\n"
    "  --env KEY=VALUE  the image's config Env (repeatable; PATH defaults to the usual Debian one)\n"
    "  --workdir DIR    the image's WorkingDir\n"
    "  --cmd ARG        the image's Cmd, one argument per --cmd\n"
    "Exit 0 on success, 1 on failure, 2 on bad usage.\n";

int Usage(const std::string& problem) {
  std::fprintf(stderr, "llm-sandbox image create: %s\n\n%s", problem.c_str(), kUsage);
  return 2;
}

}  // namespace

int ImageCreateCommand(const Args& args) {
  std::string store_dir, name, max_bytes, value;
  image::RootfsImageOptions opts;
  std::vector<std::string> positional;
  OptionCursor c(args);
  while (c.Next()) {
    const std::string& a = c.arg();
    if (a == "--help" || a == "-h") return std::fputs(kUsage, stdout), 0;
    if (c.Into("--store", store_dir) || c.Into("--name", name) || c.Into("--max-store-bytes", max_bytes) ||
        c.Into("--workdir", opts.workdir))
      continue;
    if (c.Into("--env", value)) {
      if (value.find('=') == std::string::npos || value[0] == '=')
        return Usage("--env takes KEY=VALUE, not '" + value + "'");
      opts.env.push_back(value);
    } else if (c.Into("--cmd", value)) {
      opts.cmd.push_back(value);
    } else if (a.size() > 1 && a[0] == '-') {
      return Usage("unknown option '" + a + "' (or it lacks its value)");
    } else {
      positional.push_back(a);
    }
  }
  if (name.empty()) return Usage("name the image: --name REF (e.g. --name debian-python:12)");
  if (positional.size() != 1) return Usage("create takes one ROOTFS_DIR or ROOTFS tarball");
  auto ref = image::ParseImageReference(name);
  if (!ref.ok()) return Usage(ref.error().message);
  image::StoreOptions so;
  so.root = store_dir.empty() ? image::DefaultStoreDir() : store_dir;
  auto bound = image::StoreMaxBytes(max_bytes);
  if (!bound.ok()) return Usage(bound.error().message);
  so.max_bytes = *bound;
  auto store = image::Store::Open(std::move(so));
  if (!store.ok()) return std::fprintf(stderr, "llm-sandbox image: %s\n", store.error().message.c_str()), 1;
  auto root = image::CreateImageFromRootfs(**store, positional[0], *ref, opts);
  if (!root.ok()) return std::fprintf(stderr, "llm-sandbox image: %s\n", root.error().message.c_str()), 1;
  std::printf("created %s (%s, %zu layer)\n", ref->Familiar().c_str(), root->manifest_digest.c_str(),
              root->layers.size());
  return 0;
}

}  // namespace lsb::cli
