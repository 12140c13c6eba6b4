// One step of container.build in a build box (docs/policy.md "container.build"): the image's
// layers as read-only lowers under a writable upper directory on disk, run by
// llm-sandbox-build-step (src/build/step_main.cc) as PID 1 of fresh user, pid, mount, net, ipc and
// uts namespaces, as uid 0 of its user namespace (the host's mapped root: never the host's root).
// Its network is the egress proxy only, with the build's own allow/deny lists; a cgroup bounds
// its memory and pids, a deadline its time, a filesystem of build.disk bytes what it writes
// (build_disk.h), and its output is bounded (more fails the step). The step's process itself runs
// with a few capabilities, no_new_privs and a seccomp filter (src/build/step_confine.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "egress/egress_options.h"
#include "runtime/native/build_disk.h"
#include "runtime/native/cgroup_layout.h"

namespace lsb::native {

struct BuildStepRequest {
  std::vector<std::string> lowers;  // absolute layer directories, lowest first
  std::string dir;                  // the step's own directory: upper/, work/ and merged/ are made in it
  std::vector<std::string> argv;    // argv[0] looked up on the env's PATH
  std::vector<std::string> env;
  std::string workdir = "/";
  // Image files (paths relative to /) the step writes in place: as root, the box's root does not
  // own the image's files, so each is copied up into the upper directory first, owned by it.
  std::vector<std::string> writable;
  uint64_t timeout_ms = 0;
  uint64_t memory_bytes = 0;
  uint64_t output_bytes = 4u << 20;
  uint64_t disk_bytes = 2ull << 30;  // build.disk: the upper layer's filesystem
  std::vector<std::string> allow, deny;  // the build's egress
  egress::EgressOptions egress;
  std::string cgroup_parent = "llm-sandbox";
  uint32_t id_base = 100000;
};

struct BuildStepOutcome {
  int exit_code = 0;        // 128+signal when killed
  bool timed_out = false;
  bool output_exceeded = false;
  bool disk_full = false;   // the step failed with its upper layer's filesystem (build.disk) full
  std::string output;       // all of it (at most output_bytes)
  std::string diagnostics;  // the step runner's own messages
  std::string upper;        // the upper directory, the step's changes
  std::unique_ptr<BuildDisk> disk;  // holds `upper`: mounted until the outcome is gone
};

// Where llm-sandbox-build-step is looked for: $LLM_SANDBOX_BUILD_STEP alone when set, else
// beside /proc/self/exe, then /usr/local/libexec/llm-sandbox/llm-sandbox-build-step.
std::vector<std::string> BuildStepCandidates();

// Runs the step; an error only when the box could not be made. A step that fails is an outcome
// with its exit code and output.
Result<BuildStepOutcome> RunBuildStep(const BuildStepRequest& req, const CgroupLayout& layout);

}  // namespace lsb::native
