#include "init/layers.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "protocol/messages.h"

namespace lsb::init {
namespace {

// mount(2) copies at most one page of options (copy_mount_options), NUL included.
constexpr size_t kMountOptionsMax = 4095;

// Why a layer could not be opened: EACCES is nearly always a directory above it that the box's
// unprivileged uid may not search (a store under a 0750 or 0700 directory); name the first one.
Error LayerOpenError(const std::string& layer) {
  Error e = Error::FromErrno("open image layer " + layer);
  if (e.sys_errno != EACCES) return e;
  for (size_t slash = layer.find('/', 1); slash != std::string::npos; slash = layer.find('/', slash + 1)) {
    std::string dir = layer.substr(0, slash);
    if (::access(dir.c_str(), X_OK) != 0)
      return Error{e.code, e.message + ": the box's uid may not search " + dir +
                               " (give other users search permission: chmod o+x " + dir +
                               "; the image store's directories must be searchable by every user)",
                   e.field, e.sys_errno};
  }
  return e;
}

}  // namespace

Result<std::vector<UniqueFd>> OpenLayers(const std::vector<std::string>& layers) {
  if (layers.empty()) return Error{"rootfs \"image\" needs at least one layer"};
  if (layers.size() > protocol::kMaxImageLayers)
    return Error{"the image has " + std::to_string(layers.size()) + " layers; at most " +
                 std::to_string(protocol::kMaxImageLayers) + " are supported (squash it, e.g. rebuild it with fewer RUN steps)"};
  std::vector<UniqueFd> fds;
  fds.reserve(layers.size());
  for (const auto& layer : layers) {
    if (layer.empty() || layer[0] != '/') return Error{"image layer: not an absolute path: \"" + layer + "\""};
    UniqueFd fd(::open(layer.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!fd) return LayerOpenError(layer);
    fds.push_back(std::move(fd));
  }
  return fds;
}

Result<std::string> OverlayOptions(const std::vector<int>& fds) {
  // overlayfs lists the uppermost lower layer first.
  std::string lower;
  for (auto it = fds.rbegin(); it != fds.rend(); ++it)
    lower += (lower.empty() ? "" : ":") + std::string("/proc/self/fd/") + std::to_string(*it);
  std::string opts = "lowerdir=" + lower + ",userxattr";
  if (opts.size() > kMountOptionsMax)
    return Error{"image layers: the overlay mount options take " + std::to_string(opts.size()) + " bytes, more than the " +
                 std::to_string(kMountOptionsMax) + " the kernel accepts"};
  return opts;
}

Status MountOverlay(const std::vector<int>& fds, const std::string& target) {
  if (fds.size() < 2) return Error{"an overlay of image layers needs at least two (one is bound as a directory)"};
  LSB_ASSIGN_OR_RETURN(std::string opts, OverlayOptions(fds));
  if (::mount("overlay", target.c_str(), "overlay", MS_RDONLY | MS_NOSUID | MS_NODEV, opts.c_str()) != 0)
    return Error::FromErrno("mount the image's " + std::to_string(fds.size()) + " layers (overlayfs) on " + target);
  return OkStatus();
}

}  // namespace lsb::init
