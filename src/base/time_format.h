// Timestamps as the API, the audit log and the CLI print them.
#pragma once

#include <chrono>
#include <string>

namespace lsb {

// "2026-11-29T17:02:03.456Z": RFC 3339, UTC, millisecond precision.
std::string Rfc3339(std::chrono::system_clock::time_point t);

}  // namespace lsb
