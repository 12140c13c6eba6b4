// POST /v1/sessions/{id}/fork {"count": N} (docs/api.md "Fork"): N new sessions, each in its own
// box, that start with the parent's interpreter state and files (scheduler/session/session_fork.h says
// how, and what is not carried). The parent is busy (409 for others) while its state is saved;
// the children open concurrently on the executor. All or nothing: when one child fails, the
// others are closed and the error is the answer. Owned like every session: the children are the
// parent's owner's, another token gets 404 for the parent. Memory: the fork reserves from the
// daemon's fan-out budget (byte_budget.h) the export's worst case, then only the state it holds
// and one copy-in slot; children copy in beside each other only while the budget has room.
#include <chrono>
#include <set>
#include <thread>

#include "scheduler/session/session_fork.h"
#include "server/import_gate.h"
#include "server/json_codec.h"
#include "server/routes.h"
#include "server/session_ops.h"
#include "server/session_turn.h"

namespace lsb::server {
namespace {

using nlohmann::json;
using session_ops::Conflict;
using session_ops::Find;
using session_ops::OnSession;

ApiOr<size_t> ForkCount(const HttpRequest& req) {
  auto j = ParseObject(req.body.empty() ? "{}" : req.body);
  if (!j.ok()) return j.error();
  for (const auto& [k, _] : j->items())
    if (k != "count") return BadRequest(k + ": unknown field (fork takes {\"count\": N})");
  if (!j->contains("count")) return size_t{1};
  const json& c = (*j)["count"];
  if (!c.is_number_integer() || c.get<int64_t>() < 1 || c.get<int64_t>() > static_cast<int64_t>(sched::kMaxForkCount))
    return BadRequest("count: must be an integer from 1 to " + std::to_string(sched::kMaxForkCount));
  return static_cast<size_t>(c.get<int64_t>());
}

ApiError FromFork(const Error& e) {
  if (e.code == ErrorCode::kInvalidArgument) return BadRequest(e.message);
  if (e.code == ErrorCode::kResourceExhausted) return {ApiCode::kPayloadTooLarge, e.message};
  return SandboxError(e.message);
}

// One child: a session opened like the parent (policy, language, setup, limits, owner), then the
// state put in. On the executor, like a create.
ApiOr<std::shared_ptr<sched::Session>> OpenChild(ServerContext& ctx, const sched::Session& parent,
                                                 const sched::ForkExport& state, ImportGate& gate,
                                                 std::vector<std::string>* failed) {
  sched::Admission admission;
  std::function<ApiOr<std::shared_ptr<sched::Session>>()> open = [&]() -> ApiOr<std::shared_ptr<sched::Session>> {
    auto s = sched::Session::Open(ctx.backend, ctx.boxes, parent.policy(), parent.config(),
                                  ctx.sessions.NewId());
    if (!s.ok()) return SandboxError("fork: opening a child: " + s.error().message);
    std::shared_ptr<sched::Session> child(std::move(*s));
    sched::Session::Use use(*child);
    auto pass = gate.Enter();
    auto in = sched::ImportFork(*child, state);
    if (!in.ok()) {
      child->Close();
      return FromFork(in.error());
    }
    *failed = std::move(in->failed);
    return child;
  };
  auto r = sched::RunOn<ApiOr<std::shared_ptr<sched::Session>>>(ctx.executor, open, &admission);
  if (!r) return FromAdmission(admission);
  return std::move(*r);
}

Reply Fork(ServerContext& ctx, HttpRequest& req) {
  auto start = std::chrono::steady_clock::now();
  auto s = Find(ctx, req);
  if (!s.ok()) return ErrorResponse(s.error());
  auto count = ForkCount(req);
  if (!count.ok()) return ErrorResponse(count.error());
  sched::Session& parent = **s;
  if (parent.Info().state == "busy") return ErrorResponse(Conflict(parent.id()));
  auto turn = AwaitSessionSlots(ctx, *count, "fork: ");  // the children's slots, in the create queue
  if (!turn.ok()) return ErrorResponse(turn.error());
  auto reserved = ReserveFanout(ctx, ExportWorstBytes(ctx, parent.policy()), "fork of " + parent.id());
  if (!reserved.ok()) return ErrorResponse(reserved.error());
  auto state = OnSession<sched::ForkExport>(ctx, parent, [&]() -> ApiOr<sched::ForkExport> {
    auto x = sched::ExportForFork(parent, ctx.limits.tree, ctx.limits.archive);
    if (!x.ok()) return FromFork(x.error());
    return std::move(*x);
  });
  if (!state.ok()) return ErrorResponse(state.error());
  std::vector<std::string>().swap(state->tars);  // only pause writes the tars; the trees are copied in
  ImportGate gate(ctx, ImportGate::SlotFor(state->trees));
  (*reserved)->ShrinkTo(state->bytes + ImportGate::SlotFor(state->trees));
  auto saved = std::chrono::steady_clock::now();

  std::vector<std::optional<ApiOr<std::shared_ptr<sched::Session>>>> children(*count);
  std::vector<std::vector<std::string>> not_loaded(*count);  // per child: carried names it could not load
  std::vector<std::thread> openers;
  for (size_t i = 0; i < *count; ++i)
    openers.emplace_back([&, i] { children[i].emplace(OpenChild(ctx, parent, *state, gate, &not_loaded[i])); });
  for (auto& t : openers) t.join();
  std::optional<ApiError> failed;
  for (auto& c : children)
    if (!c->ok() && !failed) failed = c->error();
  if (!failed)
    for (auto& c : children)
      if (!ctx.sessions.Add(**c) && !failed)
        failed = ctx.shutting_down ? FromAdmission(sched::Admission::kShuttingDown)
                                   : ApiError{ApiCode::kTooManyRequests, "fork: too many sessions; retry later", 5};
  if (failed) {
    for (auto& c : children)
      if (c->ok()) {
        ctx.sessions.Remove((**c)->id(), (**c)->owner());  // when it was added
        (**c)->Close();
      }
    return ErrorResponse(*failed);
  }
  json sessions = json::array();
  std::set<std::string> unloaded;
  size_t warm = 0;
  for (size_t i = 0; i < *count; ++i) {
    sessions.push_back(SessionJson((**children[i])->Info()));
    warm += (**children[i])->Info().warm ? 1 : 0;
    unloaded.insert(not_loaded[i].begin(), not_loaded[i].end());
  }
  auto ms = [](auto d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); };
  auto done = std::chrono::steady_clock::now();
  json fork = {{"parent", parent.id()},
               {"mechanism", "state_transfer"},
               {"carried", {{"globals", state->values}, {"modules", state->modules}, {"file_bytes", state->bytes}}},
               {"not_carried", {{"globals", state->skipped},
                                {"not_loaded", unloaded},
                                {"processes", "no process of the parent is carried: each child has a fresh interpreter"},
                                {"unpicklable", "functions, classes and their instances defined in the session, open "
                                                "files, sockets, threads and generators"}}},
               {"save_ms", ms(saved - start)},
               {"warm_children", warm},
               {"duration_ms", ms(done - start)}};
  if (ctx.monitor)
    for (auto& c : children)
      ctx.monitor->SessionEvent("session_created", SessionJson((**c)->Info()), (**c)->owner());
  if (!turn->reason.empty()) fork["queued"] = turn->Queued();
  return JsonResponse(201, {{"sessions", std::move(sessions)}, {"fork", std::move(fork)}});
}

}  // namespace

void AddSessionForkRoutes(Router& router, ServerContext& ctx) {
  router.Add("POST", "/v1/sessions/{id}/fork", [&ctx](HttpRequest& req, ResponseStream&) { return Fork(ctx, req); });
}

}  // namespace lsb::server
