// The one way JSON from outside the process is parsed: HTTP bodies, JSON-RPC messages (daemon and
// stdio), frames from init, the Docker engine's answers, audit log lines. Before nlohmann builds
// anything, the text is checked against a byte cap and then scanned once, linearly and with no
// stack, for its nesting depth and element count outside strings. nlohmann's parser is iterative,
// but copying, dumping and comparing a value recurse once per level: a 2 MB text of 10^6 '[' is
// a stack overflow in whichever code touches it next (as /mcp once did). A value that
// passed here is at most max_depth levels deep, so no code walking it can overflow a stack.
// Limits and their defaults: docs/security.md "Class 1 — one request crashes the daemon".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include <nlohmann/json.hpp>

#include "base/result.h"

namespace lsb {

// Defaults shared by every source; a source with a reason to differ says so where it sets them.
inline constexpr size_t kJsonMaxDepth = 64;               // levels of [ and {
inline constexpr size_t kJsonMaxElements = 1u << 20;      // array elements + object members
inline constexpr size_t kJsonMaxBytes = 10u << 20;        // like the daemon's default --max-body

struct JsonLimits {
  size_t max_bytes = kJsonMaxBytes;
  size_t max_depth = kJsonMaxDepth;
  size_t max_elements = kJsonMaxElements;
};

enum class JsonErrorKind {
  kTooLarge,        // more than max_bytes: HTTP 413
  kTooDeep,         // nested deeper than max_depth: HTTP 400, JSON-RPC -32700
  kTooManyElements, // more than max_elements: HTTP 413
  kSyntax,          // not JSON: HTTP 400, JSON-RPC -32700
};

struct JsonError {
  JsonErrorKind kind = JsonErrorKind::kSyntax;
  uint64_t limit = 0;   // the limit that was exceeded (bytes, levels, elements); 0 for kSyntax
  std::string message;  // names the limit and its value; never echoes the input
  Error AsError() const { return Error{message}; }
};

// Either the parsed value or why it was refused.
class [[nodiscard]] ParsedJson {
 public:
  ParsedJson(nlohmann::json value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  ParsedJson(JsonError error) : v_(std::move(error)) {}        // NOLINT(google-explicit-constructor)
  bool ok() const { return v_.index() == 0; }
  nlohmann::json& value() & { return std::get<0>(v_); }
  nlohmann::json&& value() && { return std::get<0>(std::move(v_)); }
  nlohmann::json& operator*() & { return value(); }
  nlohmann::json* operator->() { return &value(); }
  const JsonError& error() const { return std::get<1>(v_); }

 private:
  std::variant<nlohmann::json, JsonError> v_;
};

// What the pre-scan measures. Exact for any text nlohmann accepts (strict JSON, no comments);
// for other text the numbers are whatever the scan saw, and the parse refuses it anyway.
struct JsonShape {
  size_t depth = 0;     // deepest nesting of [ and {
  size_t elements = 0;  // array elements plus object members (each ',' and each non-empty [ {)
};
// Stops early (with a number just past the limit) once depth or elements exceed their limit.
JsonShape ScanJsonShape(std::string_view text, size_t max_depth = SIZE_MAX, size_t max_elements = SIZE_MAX);

// Caps, scans, then parses. Never throws for bad input, never recurses on it.
ParsedJson ParseBoundedJson(std::string_view text, const JsonLimits& limits = {});

// A string member of outside JSON, or `fallback` when `obj` is not an object or the member is
// absent or not a string. nlohmann's value() throws type_error on a member of another type.
std::string JsonStringOr(const nlohmann::json& obj, std::string_view key, std::string fallback);

}  // namespace lsb
