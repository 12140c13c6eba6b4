#include "init/layers.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "protocol/messages.h"

namespace lsb::init {
namespace {

// mount(2) copies at most one page of options (copy_mount_options), NUL included.
constexpr size_t kMountOptionsMax = 4095;

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
    if (!fd) return Error::FromErrno("open image layer " + layer);
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
