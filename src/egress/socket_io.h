// Timed socket steps for the egress proxy's connection threads: every wait also watches the
// proxy's stop descriptor, so stopping a box's proxy ends every one of its connections at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"
#include "policy/network_rules.h"

namespace lsb::egress {

struct Waits {
  int stop_fd = -1;  // readable once the proxy stops
};

// Waits for `events` on `fd` until `deadline`. kTimeout past it, kCancelled when stopped.
Status WaitFor(int fd, short events, std::chrono::steady_clock::time_point deadline, const Waits& w);
// Reads into `buf` (at most `max` bytes more) until it contains `terminator` or holds `max`
// bytes. Returns false when the terminator is not within `max` bytes.
Result<bool> ReadUntil(int fd, std::string& buf, std::string_view terminator, size_t max,
                       std::chrono::steady_clock::time_point deadline, const Waits& w);
// Reads until `buf` holds at least `want` bytes.
Status ReadAtLeast(int fd, std::string& buf, size_t want, std::chrono::steady_clock::time_point deadline, const Waits& w);
Status WriteAll(int fd, std::string_view data, std::chrono::steady_clock::time_point deadline, const Waits& w);
// A TCP connection to exactly `addr`:`port` (non-blocking, CLOEXEC), within the deadline.
Result<UniqueFd> ConnectTo(const IpAddress& addr, uint16_t port, std::chrono::steady_clock::time_point deadline,
                           const Waits& w);

}  // namespace lsb::egress
