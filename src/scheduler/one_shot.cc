#include "scheduler/one_shot.h"

#include <poll.h>

#include "scheduler/one_shot_pool.h"

namespace lsb::sched {
namespace {

// True once `fd` (a cancel pipe) is readable: the caller was asked to stop.
bool Signalled(int fd) {
  if (fd < 0) return false;
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

// The input files written, then (with `roots`) the manifest a change set is measured against,
// by init's file worker (runtime/box_files.h).
Status PrepareBox(BoxSession& session, const std::vector<InputFile>& files, const std::vector<std::string>* roots,
                  const ChangesLimits& limits, Result<Manifest>* baseline) {
  for (const auto& f : files) {
    if (f.archive) {
      LSB_TRY(UnpackIntoBox(session, *f.archive));
      continue;
    }
    LSB_ASSIGN_OR_RETURN(FileCall w, WriteBoxFile(session, f.path, f.data));
    if (w.reply.status != protocol::FileStatus::kOk)
      return Error{"files: cannot write " + f.path + " in the box: " + w.reply.message};
  }
  if (roots) *baseline = ManifestFromBox(session, *roots, limits);
  if (!session.usable()) return Error{"the box broke while the input files were written"};
  return OkStatus();
}

void ChangesAfterRun(BoxSession& session, const std::vector<std::string>& roots, const std::string& asked,
                     const Result<Manifest>& baseline, const ChangesLimits& limits, ExecResult& r) {
  auto fail = [&](const std::string& why) { r.changes = nlohmann::json{{"error", why}}; };
  if (!baseline.ok()) return fail(baseline.error().message);
  if (!session.usable()) return fail("no change set: the box ended with the program (" + std::string(ExecStatusName(r.status)) + ")");
  auto now = ManifestFromBox(session, roots, limits);
  if (!now.ok()) return fail(now.error().message);
  r.changes = DiffManifests(*baseline, *now, asked.empty() ? "/" : asked, limits);
}

}  // namespace

void CollectAfterRun(BoxSession& session, const std::vector<std::string>& patterns, const CollectLimits& limits,
                     ExecResult& r) {
  if (patterns.empty()) return;
  auto fail = [&](const std::string& why) {
    for (const auto& p : patterns) r.collected.push_back({p, "", why});
  };
  if (!session.usable()) return fail("not collected: the box ended with the program (" + std::string(ExecStatusName(r.status)) + ")");
  auto got = CollectFromBox(session, patterns, limits);
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
  std::vector<std::string> roots;
  Result<Manifest> baseline = Error{""};
  if (req.changes) roots = ChangeRoots(session->policy(), *req.changes);
  LSB_TRY(PrepareBox(*session, files, req.changes ? &roots : nullptr, opts.changes, &baseline));
  // Rich outputs: the prelude stages them; its trailer line on stderr says how many.
  ExecRequest run = req;
  auto outputs = PlanOneShotOutputs(session->policy(), run, opts.outputs);
  RunCallbacks live = cb;
  if (outputs && cb.on_stderr)
    live.on_stderr = [&cb, token = outputs->token](std::string_view chunk) {
      std::string_view kept = WithoutTrailer(chunk, token);
      if (!kept.empty()) cb.on_stderr(kept);
    };
  auto r = session->Run(run, live);
  if (r.ok()) r->backend = backend.name();
  if (r.ok() && outputs) {
    std::string staging_error;
    auto count = TakeTrailer(r->stderr_data, outputs->token, &staging_error);
    if (!staging_error.empty()) r->outputs.push_back({{"error", "outputs could not be staged in the box: " + staging_error}});
    if (count) CollectOutputs(*session, *outputs, *count, opts.outputs, *r);
  }
  if (r.ok()) CollectAfterRun(*session, req.collect, opts.collect, *r);
  if (r.ok() && req.changes) ChangesAfterRun(*session, roots, *req.changes, baseline, opts.changes, *r);
  if (r.ok() && detachable && !Signalled(opts.session.cancel_fd) && session->box().DetachTeardown())
    session->MarkUnusable();  // init is killed: no kShutdown
  return r;
}

}  // namespace lsb::sched
