// The dashboard served at GET /: one self-contained HTML page (no build step, no external
// resources) that reads GET /v1/executions and follows GET /v1/events.
#pragma once

#include <string_view>

namespace lsb::monitor {

std::string_view DashboardPage();

}  // namespace lsb::monitor
