// The dashboard served at GET /: one self-contained HTML page (no build step, no external
// resources) that reads GET /v1/overview (totals, filter values), GET /v1/sessions,
// GET /v1/executions and GET /v1/history (the audit log, paged), and follows GET /v1/events.
// Every value from the daemon is HTML-escaped before it reaches innerHTML (or set as text).
#pragma once

#include <string_view>

namespace lsb::monitor {

std::string_view DashboardPage();

}  // namespace lsb::monitor
