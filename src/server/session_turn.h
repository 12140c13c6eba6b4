// A session create's turn (issue 35, docs/api.md "Session queue"): the v1 create, the E2B create,
// fork and resume wait here, first come first served, for a slot under --max-sessions (the
// manager's SessionQueue), and a create then for room on the executor, both within
// --session-queue-wait in all. The answer says where it waited ("queued"), or is a 429 with
// Retry-After and the place it had in the line: every wait has an answer (DESIGN §12).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "scheduler/executor.h"
#include "scheduler/session/session_queue.h"
#include "server/api_error.h"
#include "server/http_types.h"
#include "server/server_context.h"

namespace lsb::server {

struct SessionTurn {
  using Clock = std::chrono::steady_clock;
  sched::SessionQueue::Reservation slots;  // dropped once the sessions were added, or on failure
  Clock::time_point deadline;              // of the whole wait (queue, then executor)
  bool may_wait = false;                   // --session-queue-wait > 0
  size_t position = 0;                     // 1-based place in the line at arrival; 0: did not queue
  uint64_t waited_ms = 0;
  std::string reason;                      // "max_sessions", "opening", "executor"; empty: did not wait
  bool runs_user_code = false;             // a create with `setup`: it takes no turn among the opens

  // {"waited_ms", "position", "reason"}, or null when it did not wait.
  nlohmann::json Queued() const;
  // The same, as the X-Session-Queued header, when it waited.
  void AddHeader(HttpResponse& res) const;
};

// Waits for `n` session slots. `what` starts a refusal's message ("fork: ").
ApiOr<SessionTurn> AwaitSessionSlots(ServerContext& ctx, size_t n, const std::string& what = "");

// A turn among the session opens in flight (open_turns.h), held while `fn` runs; false: a shutdown.
// No gate, or a create that runs user code while it opens: true at once, without a turn.
bool AwaitOpenTurn(ServerContext& ctx, SessionTurn& turn, std::optional<OpenTurns::Turn>& held);

// Runs `fn` on the executor for `turn`: when every worker is busy and the queue is full, waits for
// room until the turn's deadline (counted in the turn's wait) rather than refusing at once.
// Before that, it waits its turn among the opens in flight (ctx.session_opens, open_turns.h): the
// first creates of a burst to arrive finish first rather than all of them together.
template <typename T>
std::optional<T> RunForTurn(ServerContext& ctx, SessionTurn& turn, std::function<T()> fn, sched::Admission* a) {
  std::optional<OpenTurns::Turn> opening;
  if (!AwaitOpenTurn(ctx, turn, opening)) {
    *a = sched::Admission::kShuttingDown;
    return std::nullopt;
  }
  auto start = SessionTurn::Clock::now();
  auto submit = [&](sched::Executor::Task t, sched::Executor::Then then) {
    auto first = ctx.executor.Submit(t, then);  // copies: offered again when refused
    if (first != sched::Admission::kQueueFull || !turn.may_wait || start >= turn.deadline) return first;
    auto r = ctx.executor.SubmitWaitUntil(std::move(t), std::move(then), turn.deadline);
    turn.waited_ms += std::chrono::duration_cast<std::chrono::milliseconds>(SessionTurn::Clock::now() - start).count();
    if (turn.reason.empty()) turn.reason = "executor";
    return r;
  };
  return sched::RunOnWith<T>(submit, std::move(fn), a);
}

}  // namespace lsb::server
