#include "policy/parser/document_count.h"

#include <sstream>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

namespace lsb::policy_parser {
namespace {

class DocumentCounter : public YAML::EventHandler {
 public:
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
    Node(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Node(m);
  }
  void OnMapEnd() override {}

 private:
  void Node(const YAML::Mark& m) {
    if (documents == 2 && !second_node_) {
      second = m;
      second_node_ = true;
    }
  }
  bool second_node_ = false;
};

}  // namespace

DocumentCount CountDocuments(const std::string& text, int cap) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentCounter counter;
  for (int n = 0; n < cap && parser.HandleNextDocument(counter); ++n) {
  }
  return {counter.documents, counter.second};
}

}  // namespace lsb::policy_parser
