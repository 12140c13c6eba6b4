// What a box needs from a stored image to build its root: the unpacked layers, lowest first (each
// a directory verified against its diff_id, shared by every image that uses it), and the parts of
// the image's config that fill gaps the policy leaves (never loosen it). The image store produces
// it (Store::Resolve); the native backend mounts the layers read-only (overlayfs in the box's mount
// namespace) with the policy's tmpfs on top.
#pragma once

#include <string>
#include <vector>

namespace lsb::image {

struct ImageConfig {
  std::vector<std::string> env;         // "KEY=VALUE", as the image's config.Env
  std::string working_dir;              // config.WorkingDir ("" = not set)
  std::vector<std::string> entrypoint;  // config.Entrypoint
  std::vector<std::string> cmd;         // config.Cmd
  std::string user;                     // config.User (informational: the box's uid is the policy's)
  std::string os = "linux";             // the platform the image was built for
  std::string architecture;             // "amd64", "arm64", ...
};

struct ImageRoot {
  std::string reference;                // canonical reference it was resolved from
  std::string manifest_digest;          // "sha256:..." of the manifest used
  std::vector<std::string> layers;      // absolute directories, lowest layer first
  ImageConfig config;
};

}  // namespace lsb::image
