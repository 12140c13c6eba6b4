// Policy -> the body of POST /containers/create (DESIGN §3, outer box). Pure: no I/O, unit-tested.
// Every control the policy states is mapped to an engine field; what cannot be mapped is refused by
// DockerBackend::Check before a spec is ever built.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "policy/policy.h"
#include "protocol/messages.h"

namespace lsb::docker {

// Where init lives inside every container (bind-mounted read-only from the host).
inline constexpr const char* kInitInContainer = "/.llm-sandbox/init";
// A small tmpfs init writes the program file into (noexec: the interpreter reads it).
using protocol::kJobDir;
// Boxes with the network on join this bridge network, whose inter-container traffic is off
// (com.docker.network.bridge.enable_icc=false): they reach the outside, never each other.
inline constexpr const char* kIsolatedNetwork = "llm-sandbox-isolated";
inline constexpr uint64_t kJobDirBytes = 16ull << 20;

// Labels: every container we create carries kLabelOwner, so orphans are found by label.
inline constexpr const char* kLabelOwner = "io.llm-sandbox.owner";    // "<host>/<pid>/<start time>"
inline constexpr const char* kLabelPolicy = "io.llm-sandbox.policy";  // policy name, for humans
inline constexpr const char* kLabelPool = "io.llm-sandbox.pool";      // "1" for warm-pool boxes
inline constexpr const char* kLabelMounts = "io.llm-sandbox.mounts";  // the box's container.mounts views (host dir)
inline constexpr const char* kLabelNetwork = "io.llm-sandbox.network";  // on the network we create (kept)

struct SpecInputs {
  std::string image;         // the engine image (after the image map)
  std::string init_host_path;  // absolute path of the static llm-sandbox-init on the engine's host
  // Instead of init_host_path: a named volume holding init (file init_volume_file at its root),
  // mounted read-only at the directory of kInitInContainer (init_source.h says when).
  std::string init_volume;
  std::string init_volume_file;
  std::string owner;         // kLabelOwner value
  bool pooled = false;
  std::string seccomp_opt;  // "seccomp=<json|path>" (seccomp_profile.h); empty: the engine's default
  // The engine is Podman: the spec names no Ulimits. Podman replaces its containers.conf
  // default_ulimits by whatever a request names, and then raises RLIMIT_NOFILE/NPROC of the
  // container to 1048576 itself, which fails where root lacks CAP_SYS_RESOURCE (docs/docker.md).
  bool podman = false;
};

nlohmann::json BuildContainerSpec(const Policy& policy, const SpecInputs& in);

// The container's PidsLimit: the policy's pids under runc. Under runsc the policy's limit is
// enforced inside gVisor (RLIMIT_NPROC) and this is a host ceiling on the Sentry's threads.
inline constexpr uint64_t kGvisorHostPidsPerTask = 8;
inline constexpr uint64_t kGvisorHostPidsBase = 256;
uint64_t HostPidsLimit(const Policy& policy);

}  // namespace lsb::docker
