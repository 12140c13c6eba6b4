// Strict, error-collecting access to a parsed YAML document: every read that fails records a
// diagnostic with the node's file:line:column and goes on, so one pass reports every mistake.
// yaml-cpp marks are 0-based; SourcePos is 1-based.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "policy/diagnostic.h"
#include "policy/policy.h"

namespace lsb {

// One key: value pair, with the dotted path used in messages and Policy::positions.
struct Field {
  std::string path;  // "resources.memory"
  YAML::Node key;
  YAML::Node value;
  // Where to point for a problem with the value: the value itself, or its key when the value is
  // empty (yaml-cpp marks an empty value at the next token, which would mislead).
  YAML::Mark mark() const;
};

class YamlReader {
 public:
  YamlReader(std::string file, std::string_view source);

  const std::string& file() const { return file_; }
  SourcePos Pos(const YAML::Mark& mark) const;
  void Report(const YAML::Mark& mark, std::string message, std::string hint);
  void Report(SourcePos pos, std::string message, std::string hint);
  const std::vector<PolicyDiagnostic>& diagnostics() const { return diagnostics_; }

  // Walks a mapping whose keys are fixed: reports a non-mapping, unknown keys (with the closest
  // known one) and repeated keys; calls `fn` once per known key in file order.
  // `misspelled`, when given, is called for an unknown key that is close to the known `guess`
  // (Field's path is the guess); what it returns is added to the hint ("" for nothing).
  using Misspelled = std::function<std::string(const std::string& guess, const Field&)>;
  void ForEachKnownKey(const Field& map, const std::vector<std::string>& known,
                       const std::function<void(const Field&)>& fn, const Misspelled& misspelled = nullptr);
  // Walks a mapping whose keys are data (tmpfs paths, env names): reports a non-mapping, non-scalar
  // keys and repeated keys; calls `fn` per entry with path "PARENT.KEY".
  void ForEachEntry(const Field& map, const std::function<void(const std::string& key, const Field&)>& fn);

  // Typed reads; each reports and returns nullopt when the value has the wrong shape.
  std::optional<std::string> String(const Field& f);  // any scalar, not empty
  std::optional<bool> Bool(const Field& f);           // true | false
  std::optional<uint64_t> Integer(const Field& f);    // decimal, >= 0
  // A sequence of scalars; items are returned as Fields with paths "PARENT[i]".
  std::optional<std::vector<Field>> ScalarList(const Field& f);

  // Position of `offset` characters into a one-line scalar, when the source text confirms that
  // `expect` is written there; the scalar's own position otherwise.
  SourcePos PosInScalar(const YAML::Node& scalar, size_t offset, std::string_view expect) const;

  static std::string KindOf(const YAML::Node& node);  // "a mapping", "a list", "a value", "nothing"

 private:
  bool IsMapping(const Field& f);

  std::string file_;
  std::vector<std::string> lines_;
  std::vector<PolicyDiagnostic> diagnostics_;
};

}  // namespace lsb
