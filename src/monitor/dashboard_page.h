// The dashboard served at GET /: one self-contained HTML page (no build step, no external
// resources) that reads GET /v1/overview (totals, filter values), GET /v1/sessions,
// GET /v1/executions and GET /v1/history (the audit log, paged), and follows GET /v1/events.
// Every value from the daemon is HTML-escaped before it reaches innerHTML (or set as text).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace lsb::monitor {

// The page; `first` ({"overview", "executions": {"running", "recent"}, "sessions": {"sessions"}},
// the answers of the routes the page polls) is drawn before the first paint, so a screenshot
// right after load shows the daemon's state rather than "loading".
// Only a daemon without tokens gives one: the page itself is served without a token.
std::string DashboardPage(const std::optional<nlohmann::json>& first);

}  // namespace lsb::monitor
