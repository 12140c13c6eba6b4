// A request's reservation from the daemon's fan-out budget (byte_budget.h) as the API answers it:
// 429 with Retry-After naming the budget when it stays spent for the budget's wait. Shared so a
// reservation can ride on the answer (HttpResponse::hold) and end once the answer is written.
#pragma once

#include <memory>
#include <string>

#include "server/api_error.h"
#include "server/server_context.h"

namespace lsb::server {

using SharedReservation = std::shared_ptr<Reservation>;

inline ApiOr<SharedReservation> ReserveFanout(ServerContext& ctx, uint64_t bytes, const std::string& what) {
  if (!ctx.fanout) return std::make_shared<Reservation>();
  auto r = ctx.fanout->Reserve(bytes, what);
  if (!r.ok()) return ApiError{ApiCode::kTooManyRequests, r.error().message, 5};
  return std::make_shared<Reservation>(std::move(*r));
}

// Extra room at once, or none (a request's further parallelism; it always has its own first slot).
inline std::optional<Reservation> TryFanout(ServerContext& ctx, uint64_t bytes) {
  if (!ctx.fanout) return Reservation();
  return ctx.fanout->TryReserve(bytes);
}

// What copying a session's writable paths out of its box may buffer at once, before its size is
// known: per path, the helper's reply, its parsed records and the tar made of them
// (scheduler/workspace_io.cc TreeFromBox), each up to the tree bound, the reply twice while it grows.
inline uint64_t ExportWorstBytes(const ServerContext& ctx, const Policy& policy) {
  return 4 * ctx.limits.tree.max_bytes * std::max<size_t>(policy.tmpfs.size(), 1);
}

}  // namespace lsb::server
