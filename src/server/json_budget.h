// Output counted as it will be sent (docs/security.md, class 2): in JSON a NUL byte costs six bytes
// (`\u0000`), so a byte cap on raw output is not a cap on a response. These helpers measure and cut
// strings by their encoded size, the way the daemon serializes them (nlohmann, UTF-8 kept, invalid
// bytes replaced by U+FFFD).
#pragma once

#include <cstddef>
#include <string_view>

#include <nlohmann/json.hpp>

namespace lsb::server {

// An upper bound on the bytes `s` takes inside a JSON string (without the quotes).
size_t JsonStringBytes(std::string_view s);
// The longest prefix of `s` (in raw bytes, never inside a UTF-8 sequence) whose JSON-encoded
// size is at most `max_bytes`.
size_t JsonPrefixFor(std::string_view s, size_t max_bytes);
// The bytes of `j` as the daemon sends it.
size_t JsonBytes(const nlohmann::json& j);

// An execution result's JSON (ExecResultJson) made to fit `max_bytes`: stdout and stderr are cut
// (by encoded size), then alerts past the first are dropped (counted in `alerts_omitted`); a cut
// result says `"truncated": true, "response_truncated": true`. Collected files that still do not
// fit (last first) become error entries. Returns the bytes it now takes.
size_t FitResultJson(nlohmann::json& result, size_t max_bytes);

}  // namespace lsb::server
