// A request may lower a policy's limits, never raise them (DESIGN §4). This applies a request's
// limits to a copy of the server-side policy, or says which one would loosen it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "policy/policy.h"

namespace lsb {

struct PolicyOverrides {
  std::optional<double> cpu;
  std::optional<uint64_t> memory_bytes;
  std::optional<uint64_t> timeout_ms;
  std::optional<uint64_t> timeout_grace_ms;  // 0 allowed (SIGKILL at once)
  std::optional<uint32_t> pids;
  std::optional<uint64_t> output_bytes;
  std::optional<uint64_t> open_files;
  std::optional<uint64_t> file_size_bytes;
  std::optional<bool> network_enabled;  // may only turn the network off
  // Replaces network.allow; every entry must be covered by one of the policy's (narrowing only).
  std::optional<std::vector<std::string>> network_allow;
};

// Whether each given value is one a box can run with at all: positive, memory at least
// kMinMemoryBytes, cpu at least kMinCpu. The error is kInvalidArgument with `field` the policy key
// ("resources.memory"), which its message starts with. A request failing it is a bad request (400),
// not a loosening (403).
Status CheckRequestedLimits(const PolicyOverrides& overrides);

// A copy of `policy` with every given value applied. Errors (naming the field, the asked value
// and the policy's) when a value is zero (kInvalidArgument, via CheckRequestedLimits) or above the
// policy's, or turns the network on (kPermissionDenied); `field` is the policy key. The
// copy's positions of changed fields are cleared: they no longer come from the file.
Result<Policy> TightenPolicy(const Policy& policy, const PolicyOverrides& overrides);

}  // namespace lsb
