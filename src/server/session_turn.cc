#include "server/session_turn.h"

namespace lsb::server {
namespace {

using nlohmann::json;
using Outcome = sched::SessionQueue::Outcome;

// Seconds a refused create is told to wait: a slot frees when a session ends, which we cannot
// foresee; a few seconds keeps a burst's retries from hammering the daemon.
constexpr int kRetryAfterS = 5;

ApiError Refusal(const ServerContext& ctx, const sched::SessionQueue::Ticket& t, const std::string& what) {
  if (t.outcome == Outcome::kShuttingDown) return FromAdmission(sched::Admission::kShuttingDown);
  const auto limits = ctx.sessions.queue().limits();
  const std::string cap = "the daemon holds its maximum of " + std::to_string(ctx.sessions.max_sessions()) +
                          " sessions (serve --max-sessions)";
  std::string message;
  if (t.outcome == Outcome::kQueueFull)
    message = cap + " and " + std::to_string(t.waiting) + " creates already wait for one (serve --session-queue " +
              std::to_string(limits.max_waiting) + "); retry later";
  else if (t.outcome == Outcome::kTimedOut)
    message = cap + "; waited " + std::to_string(t.waited_ms) + " ms in the create queue (position " +
              std::to_string(t.position) + " of " + std::to_string(t.waiting + 1) +
              " when it gave up, serve --session-queue-wait); delete a session or retry later";
  else
    message = cap + "; delete one or retry later";
  json queue = {{"reason", "max_sessions"},
                {"length", t.waiting},
                {"max_length", limits.max_waiting},
                {"max_wait_ms", limits.max_wait.count()},
                {"waited_ms", t.waited_ms}};
  queue["position"] = t.position ? json(t.position) : json(nullptr);
  return {ApiCode::kTooManyRequests, what + message, kRetryAfterS, {{"queue", queue}}};
}

}  // namespace

json SessionTurn::Queued() const {
  if (reason.empty()) return nullptr;
  json q = {{"waited_ms", waited_ms}, {"reason", reason}};
  q["position"] = position ? json(position) : json(nullptr);
  return q;
}

void SessionTurn::AddHeader(HttpResponse& res) const {
  if (reason.empty()) return;
  res.headers.emplace_back("X-Session-Queued", "waited_ms=" + std::to_string(waited_ms) + "; position=" +
                                                   std::to_string(position) + "; reason=" + reason);
}

ApiOr<SessionTurn> AwaitSessionSlots(ServerContext& ctx, size_t n, const std::string& what) {
  const size_t cap = ctx.sessions.max_sessions();
  if (n > cap)  // could never fit: no use waiting
    return ApiError{ApiCode::kTooManyRequests,
                    what + std::to_string(n) + " sessions at once are more than the daemon's maximum of " +
                        std::to_string(cap) + " (serve --max-sessions)",
                    kRetryAfterS};
  const auto start = SessionTurn::Clock::now();
  auto& queue = ctx.sessions.queue();
  const auto max_wait = queue.limits().max_wait;
  auto ticket = queue.Acquire(n);
  if (!ticket.granted()) return Refusal(ctx, ticket, what);
  SessionTurn turn;
  turn.slots = std::move(ticket.slots);
  turn.may_wait = max_wait.count() > 0;
  turn.deadline = start + max_wait;
  turn.position = ticket.position;
  if (ticket.position) {
    turn.waited_ms = ticket.waited_ms;
    turn.reason = "max_sessions";
  }
  return turn;
}

bool AwaitOpenTurn(ServerContext& ctx, SessionTurn& turn, std::optional<OpenTurns::Turn>& held) {
  if (!ctx.session_opens || turn.runs_user_code) return true;
  auto out = ctx.session_opens->Await();
  if (out.position) {
    turn.waited_ms += out.waited_ms;
    if (turn.reason.empty()) turn.reason = "opening";
    if (!turn.position) turn.position = out.position;  // its place in the line it waited in
  }
  if (out.turn) held.emplace(std::move(*out.turn));
  return out.go;
}

}  // namespace lsb::server
