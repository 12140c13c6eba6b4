// Counts the documents of a YAML stream, at most `cap`, without building nodes. YAML::LoadAll is
// not used: yaml-cpp 0.7 never returns from it on a stray ',' at document level (each round yields
// an empty document without consuming the token, and memory grows without bound; found by
// fuzz/policy_parser, input kept in fuzz/regressions/policy_parser/).
#pragma once

#include <string>

#include <yaml-cpp/mark.h>

namespace lsb::policy_parser {

struct DocumentCount {
  int documents = 0;
  YAML::Mark second;  // the first node of the second document (its "---" line if it has none)
};
DocumentCount CountDocuments(const std::string& text, int cap);

}  // namespace lsb::policy_parser
