#include "policy/bounded_yaml.h"

#include <sstream>

#include <yaml-cpp/eventhandler.h>

namespace lsb {
namespace {

// Thrown from inside yaml-cpp's event callbacks to stop its (recursive) parser at once.
struct OverLimit {
  YamlBoundsError error;
};

class ShapeCounter : public YAML::EventHandler {
 public:
  explicit ShapeCounter(const YamlLimits& limits) : limits_(limits) {}

  int documents = 0;
  YAML::Mark second;  // the first node of the second document (its "---" line if it has none)

  void OnDocumentStart(const YAML::Mark& m) override {
    if (++documents == 2) second = m;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { Node(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { Node(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override { Node(m); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Open(m);
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Open(m);
  }
  void OnMapEnd() override { --depth_; }

 private:
  void Node(const YAML::Mark& m) {
    if (documents == 2 && !second_node_) {
      second = m;
      second_node_ = true;
    }
    if (++nodes_ > limits_.max_nodes)
      throw OverLimit{{YamlErrorKind::kTooManyNodes, limits_.max_nodes, m,
                       "more than the limit of " + std::to_string(limits_.max_nodes) + " YAML nodes"}};
  }
  void Open(const YAML::Mark& m) {
    Node(m);
    if (++depth_ > limits_.max_depth)
      throw OverLimit{{YamlErrorKind::kTooDeep, limits_.max_depth, m,
                       "nested deeper than the limit of " + std::to_string(limits_.max_depth) +
                           " levels of lists and mappings"}};
  }

  const YamlLimits& limits_;
  size_t depth_ = 0;
  size_t nodes_ = 0;
  bool second_node_ = false;
};

// YAML::Load reads the first document and the policy parser refuses a file of more (YamlShape's
// count goes up to three); a bounded number of rounds also keeps clear of yaml-cpp 0.7's endless
// HandleNextDocument on a stray ',' (fuzz/regressions/policy_parser/yaml-cpp-loadall-hang-*).
constexpr int kDocumentsChecked = 3;

}  // namespace

YamlShape ScanYaml(std::string_view text, const YamlLimits& limits) {
  if (text.size() > limits.max_bytes)
    return {YamlBoundsError{YamlErrorKind::kTooLarge, limits.max_bytes, YAML::Mark(),
                            "the file is " + std::to_string(text.size()) + " bytes, more than the limit of " +
                                std::to_string(limits.max_bytes) + " bytes"}};
  std::istringstream in{std::string(text)};
  YAML::Parser parser(in);
  ShapeCounter counter(limits);
  try {
    for (int n = 0; n < kDocumentsChecked && parser.HandleNextDocument(counter); ++n) {
    }
  } catch (const OverLimit& e) {
    return {e.error, counter.documents, counter.second};
  }
  return {std::nullopt, counter.documents, counter.second};
}

std::optional<YamlBoundsError> CheckYamlBounds(std::string_view text, const YamlLimits& limits) {
  try {
    return ScanYaml(text, limits).refused;
  } catch (const YAML::Exception& e) {
    return YamlBoundsError{YamlErrorKind::kSyntax, 0, e.mark, "invalid YAML: " + e.msg};
  }
}

Result<YAML::Node> LoadBoundedYaml(std::string_view text, const std::string& file_name, const YamlLimits& limits) {
  auto where = [&](const YAML::Mark& m) {
    return file_name + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
  };
  if (auto refused = CheckYamlBounds(text, limits)) return Error{where(refused->mark) + ": " + refused->message};
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return Error{where(e.mark) + ": invalid YAML: " + e.msg};
  }
}

}  // namespace lsb
