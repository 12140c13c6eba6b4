// The one way YAML files (policies, the image map) are read: a byte cap, then one event pass that
// counts nesting depth and nodes and stops at the first one over its limit, then YAML::Load.
// yaml-cpp's parser recurses once per level of nesting (it gives up only at 500 levels); the
// event pass stops it at max_depth, so neither it nor any code walking the nodes goes deep, and
// a file of many tiny nodes cannot make hundreds of MB of yaml-cpp nodes. The JSON counterpart is
// base/bounded_json.h; defaults in docs/security.md "Class 1 — one request crashes the daemon".
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <yaml-cpp/yaml.h>

#include "base/result.h"

namespace lsb {

inline constexpr size_t kYamlMaxBytes = 1u << 20;  // a policy or image map file
inline constexpr size_t kYamlMaxDepth = 64;        // levels of sequences and mappings
inline constexpr size_t kYamlMaxNodes = 1u << 16;  // scalars, sequences, mappings, aliases

struct YamlLimits {
  size_t max_bytes = kYamlMaxBytes;
  size_t max_depth = kYamlMaxDepth;
  size_t max_nodes = kYamlMaxNodes;
};

enum class YamlErrorKind { kTooLarge, kTooDeep, kTooManyNodes, kSyntax };

struct YamlBoundsError {
  YamlErrorKind kind = YamlErrorKind::kSyntax;
  uint64_t limit = 0;  // the limit exceeded; 0 for kSyntax
  YAML::Mark mark;     // where (0-based, as yaml-cpp marks); the file's start for kTooLarge
  std::string message; // names the limit and its value
};

// Checks `text` (every document of it that a loader would look at) against the limits without
// building nodes. nullopt: within them (YAML syntax errors are left to the loader, which reports
// them with its own words), except that a syntax error met on the way is returned as kSyntax.
std::optional<YamlBoundsError> CheckYamlBounds(std::string_view text, const YamlLimits& limits = {});

// What one event pass over `text` saw: the first limit it is over (then it stopped), and how many
// documents it holds (counted up to 3), with the first node of the second (its "---" line if it
// has none). Throws YAML::Exception at a syntax error, where YAML::Load would.
struct YamlShape {
  std::optional<YamlBoundsError> refused;
  int documents = 0;
  YAML::Mark second;
};
YamlShape ScanYaml(std::string_view text, const YamlLimits& limits = {});

// CheckYamlBounds, then YAML::Load; errors read "FILE:LINE:COL: message".
Result<YAML::Node> LoadBoundedYaml(std::string_view text, const std::string& file_name,
                                   const YamlLimits& limits = {});

}  // namespace lsb
