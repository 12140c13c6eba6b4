// Opening a stream connection to the engine, bounded in time: a dead engine must never hang a caller.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"
#include "runtime/docker/endpoint.h"

namespace lsb::docker {

// Connects within `timeout`. The error names the endpoint and says how to start an engine.
Result<UniqueFd> Connect(const Endpoint& ep, std::chrono::milliseconds timeout);

// Bounds every later blocking read and write on `fd` (SO_RCVTIMEO/SO_SNDTIMEO); 0 = unbounded.
Status SetIoTimeout(int fd, std::chrono::milliseconds timeout);

// Sends all of `data` with MSG_NOSIGNAL: an engine that drops the connection is an error, never a
// SIGPIPE that kills the caller.
Status SendAll(int fd, std::string_view data);

// The hint appended to "engine unreachable" errors.
std::string EngineDownHint(const Endpoint& ep);

}  // namespace lsb::docker
