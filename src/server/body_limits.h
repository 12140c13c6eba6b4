// --max-body and --max-file agree (docs/api.md "Sizes"): an execute body carries a file as base64
// (4 bytes per 3) plus the code and the other fields, so a body limit below that makes the file
// limit unreachable. Without --max-body, the body limit is derived from the file limit; with only
// --max-body, the file limit follows it down to what fits; both given and inconsistent: refused.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/result.h"

namespace lsb::server {

inline constexpr uint64_t kBodyEnvelopeBytes = 64u << 10;  // the code, path and fields around one file
inline constexpr uint64_t kMinDefaultBodyBytes = 10u << 20;

struct BodyLimits {
  uint64_t max_body = 0;
  uint64_t max_file = 0;
  std::string note;  // what was derived, for the startup log ("" when nothing was)
};

// The body an execute request needs to carry one file of `max_file` bytes as base64.
uint64_t BodyBytesForFile(uint64_t max_file);
// `max_body` / `max_file`: as given (nullopt = not given); `default_file` when the file limit is not.
Result<BodyLimits> ReconcileBodyLimits(std::optional<uint64_t> max_body, std::optional<uint64_t> max_file,
                                       uint64_t default_file);

}  // namespace lsb::server
