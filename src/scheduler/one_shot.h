// The one-shot lifecycle, as the daemon and `llm-sandbox run` both run it: a box (the pool's when
// the registry has one, else a fresh one), optional input files written into its tmpfs by the
// in-box helper, one execution, the box destroyed. The box is registered for the whole time, so a
// shutdown can kill it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "policy/policy.h"
#include "runtime/backend.h"
#include "runtime/runner.h"
#include "scheduler/archive/archive_in.h"
#include "scheduler/box_registry.h"
#include "scheduler/changes/change_set.h"
#include "scheduler/driver/rich_outputs.h"
#include "scheduler/workspace_io.h"

namespace lsb::sched {

struct InputFile {
  std::string path;  // already checked with CheckSandboxPath (an archive's target: CheckSandboxDir)
  std::string data;
  std::shared_ptr<const UnpackedArchive> archive;  // set: unpacked under `path`, `data` unused
};

struct OneShotOptions {
  // How a fresh box's session is opened (cancel_fd: a signal pipe); a pooled box keeps the pool's.
  SessionOptions session;
  // The caller exits right after the run (`llm-sandbox run`): once the run completed and was not
  // cancelled, the box's removal is left behind (Box::DetachTeardown), prepared while the box sets
  // itself up. A failed or cancelled run waits until the box is gone.
  bool leave_teardown_behind = false;
  // The bounds of the request's `collect` (ExecRequest::collect).
  CollectLimits collect;
  // The bounds of rich outputs (rich_outputs.h); a python run gets them unless the request
  // turned them off (ExecRequest::outputs).
  OutputsLimits outputs;
  // The bounds of the request's change set (ExecRequest::changes).
  ChangesLimits changes;
};

// Fills r.collected with the files `patterns` match in `session`'s box (the in-box helper runs
// once more); a box that ended, or a helper that failed, gives one error entry per pattern.
void CollectAfterRun(BoxSession& session, const std::vector<std::string>& patterns, const CollectLimits& limits,
                     ExecResult& r);

Result<ExecResult> RunOneShot(Backend& backend, BoxRegistry& registry, const Policy& policy,
                              const ExecRequest& req, const std::vector<InputFile>& files,
                              const RunCallbacks& cb = {}, const OneShotOptions& opts = {});

}  // namespace lsb::sched
