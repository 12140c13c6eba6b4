// container.mounts on the Docker backend. The engine only binds host paths, and a plain bind of a
// source would follow its symlinks at create time, show the host's owners (the program could not
// write an overlay) and, in runc 1.1, lose nosuid/nodev/noexec when it remounts a bind read-only
// (measured). So the daemon makes each box's view itself, on the engine's host, and the engine
// binds that view without remounting it (a clone keeps every flag, read-only included):
//   - ro: the source's detached, id-mapped, read-only, nosuid/nodev/noexec mount
//     (runtime/host_mount.h: opened without following symlinks after the root check),
//     attached at <box dir>/m<i>/view;
//   - overlay: that mount attached at m<i>/lower, an overlayfs on it at m<i>/view whose upper and
//     work dirs are on a tmpfs of the mount's size at m<i>/scratch: the box's writes land there,
//     never in the source, and go with the box.
// Box dirs live under kDockerMountsRoot/<pid>_<start time>/ of their owner (0700, root's); the
// object owns them (RAII: its destructor detaches every mount and removes the dirs). What a
// killed daemon left is swept at the next start (RemoveStaleMountViews), as its containers are
// reaped (ownership.h). Init checks in the box that each target really is such a mount
// (init/mounts.h CheckHostView): fail closed.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "protocol/messages.h"

namespace lsb::docker {

inline constexpr const char* kDockerMountsRoot = "/run/llm-sandbox/docker-mounts";

class HostMountViews {
 public:
  // The views of `checked` (sources already resolved against the roots: mount_roots.h) for one
  // box whose program runs as uid/gid on the host (the engine remaps no ids). `owner` is the
  // backend's kLabelOwner value. On failure nothing is left mounted.
  static Result<std::unique_ptr<HostMountViews>> Make(const std::string& owner,
                                                      const std::vector<protocol::MountSpec>& checked, uid_t uid,
                                                      gid_t gid);
  ~HostMountViews();
  HostMountViews(const HostMountViews&) = delete;
  HostMountViews& operator=(const HostMountViews&) = delete;

  // HostConfig.Mounts entries binding each view at its target.
  nlohmann::json SpecMounts() const;
  const std::string& dir() const { return dir_; }

 private:
  explicit HostMountViews(std::string dir) : dir_(std::move(dir)) {}
  Status Add(const protocol::MountSpec& m, size_t index, uid_t uid, gid_t gid);
  void Release();

  std::string dir_;
  std::vector<std::string> mounted_;  // mount points, in the order made (detached in reverse)
  std::vector<std::string> made_;     // directories made, in order (removed in reverse)
  std::vector<std::pair<std::string, std::string>> binds_;  // view -> target
};

// Removes `owner`'s (now empty) dir at the backend's shutdown; left in place while it holds views.
void RemoveOwnMountDir(const std::string& owner);

// Detaches the mounts and removes the dirs of owners no longer alive (ownership.h OwnerAlive).
// Returns how many owners' dirs were removed.
size_t RemoveStaleMountViews();

}  // namespace lsb::docker
