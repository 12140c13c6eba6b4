// Units as people write them in a policy: sizes ("256M", "256Mi", "1G", "512k", plain bytes), CPU
// ("0.5", "500m" millicores) and durations (30 = seconds, "30s", "500ms", "2m", "1m30s").
// Parsers return the reason on failure; the policy loader adds the position and a hint.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace lsb::units {

// Bytes. Suffixes k, M, G, T (any case, optional "i" and/or "B") are powers of 1024, as Docker
// reads them; no suffix (or "B") means bytes. A fraction needs a suffix: "1.5G" is fine, "1.5" not.
Result<uint64_t> ParseBytes(std::string_view text);

// CPU cores: "2", "0.5", or millicores "500m". Never negative.
Result<double> ParseCpu(std::string_view text);

// Milliseconds. A bare number is seconds ("30", "0.5"); otherwise one or more number+unit pairs
// with units ms, s, m, h ("500ms", "2m", "1m30s").
Result<uint64_t> ParseDurationMs(std::string_view text);

// Short human forms for explain and messages: "256Mi", "1.5Gi", "100 bytes"; "30s", "1m30s",
// "500ms"; "0.5".
std::string FormatBytes(uint64_t bytes);
std::string FormatDurationMs(uint64_t ms);
std::string FormatCpu(double cores);

}  // namespace lsb::units
