// The one-shot lifecycle as the daemon runs it: a fresh box, optional input files written into
// its tmpfs by the in-box helper, one execution, the box destroyed. The box is registered for the
// whole time, so a shutdown can kill it.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "policy/policy.h"
#include "runtime/backend.h"
#include "runtime/runner.h"
#include "scheduler/box_registry.h"

namespace lsb::sched {

struct InputFile {
  std::string path;  // already checked with CheckSandboxPath
  std::string data;
};

Result<ExecResult> RunOneShot(Backend& backend, BoxRegistry& registry, const Policy& policy,
                              const ExecRequest& req, const std::vector<InputFile>& files,
                              const RunCallbacks& cb = {});

}  // namespace lsb::sched
