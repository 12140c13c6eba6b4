#include "scheduler/one_shot.h"

#include <poll.h>

#include "scheduler/one_shot_pool.h"
#include "scheduler/python_driver.h"

namespace lsb::sched {
namespace {

// True once `fd` (a cancel pipe) is readable: the caller was asked to stop.
bool Signalled(int fd) {
  if (fd < 0) return false;
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

Status WriteInputFiles(BoxSession& session, const std::vector<InputFile>& files) {
  if (files.empty()) return OkStatus();
  LSB_ASSIGN_OR_RETURN(auto driver, PythonDriver::Start(session, 60000));
  for (const auto& f : files) {
    if (f.archive) {
      LSB_TRY(UnpackIntoBox(*driver, *f.archive));
      continue;
    }
    LSB_ASSIGN_OR_RETURN(FileOpResult w, driver->WriteFile(f.path, f.data));
    if (w.status != FileOpStatus::kOk) return Error{"files: cannot write " + f.path + " in the box: " + w.message};
  }
  driver->Stop();
  if (!session.usable()) return Error{"the box broke while the input files were written"};
  return OkStatus();
}

}  // namespace

void CollectAfterRun(BoxSession& session, const std::vector<std::string>& patterns, const CollectLimits& limits,
                     ExecResult& r) {
  if (patterns.empty()) return;
  auto fail = [&](const std::string& why) {
    for (const auto& p : patterns) r.collected.push_back({p, "", why});
  };
  if (!session.usable()) return fail("not collected: the box ended with the program (" + std::string(ExecStatusName(r.status)) + ")");
  auto driver = PythonDriver::Start(session, 60000);
  if (!driver.ok()) return fail("not collected: " + driver.error().message);
  auto got = CollectFromBox(**driver, patterns, limits);
  (*driver)->Stop();
  if (!got.ok()) return fail("not collected: " + got.error().message);
  r.collected = std::move(*got);
}

Result<ExecResult> RunOneShot(Backend& backend, BoxRegistry& registry, const Policy& policy,
                              const ExecRequest& req, const std::vector<InputFile>& files,
                              const RunCallbacks& cb, const OneShotOptions& opts) {
  LSB_TRY(BuildRunSpec(policy, req));  // validate the request before paying for a box
  // A warm box when the daemon keeps a pool (used boxes are torn down behind, by its reaper).
  LSB_ASSIGN_OR_RETURN(auto session, AcquireOneShotBox(registry, backend, policy, opts.session));
  BoxRegistry::Lease lease(registry, session.get());
  // Prepared while init sets the box up, not on the way out (the native box forks a helper).
  bool detachable = opts.leave_teardown_behind && session->box().PrepareDetachedTeardown();
  LSB_TRY(WriteInputFiles(*session, files));
  auto r = session->Run(req, cb);
  if (r.ok()) r->backend = backend.name();
  if (r.ok()) CollectAfterRun(*session, req.collect, opts.collect, *r);
  if (r.ok() && detachable && !Signalled(opts.session.cancel_fd) && session->box().DetachTeardown())
    session->MarkUnusable();  // init is killed: no kShutdown
  return r;
}

}  // namespace lsb::sched
