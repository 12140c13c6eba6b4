// The one-shot lifecycle, as the daemon and `llm-sandbox run` both run it: a box (the pool's when
// the registry has one, else a fresh one), optional input files written into its tmpfs by the
// in-box helper, one execution, the box destroyed. The box is registered for the whole time, so a
// shutdown can kill it.
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

struct OneShotOptions {
  // How a fresh box's session is opened (cancel_fd: a signal pipe); a pooled box keeps the pool's.
  SessionOptions session;
  // The caller exits right after the run (`llm-sandbox run`): once the run completed and was not
  // cancelled, the box's removal is left behind (Box::DetachTeardown), prepared while the box sets
  // itself up. A failed or cancelled run waits until the box is gone.
  bool leave_teardown_behind = false;
};

Result<ExecResult> RunOneShot(Backend& backend, BoxRegistry& registry, const Policy& policy,
                              const ExecRequest& req, const std::vector<InputFile>& files,
                              const RunCallbacks& cb = {}, const OneShotOptions& opts = {});

}  // namespace lsb::sched
