#include "runtime/docker/build_labels.h"

namespace lsb::docker {

std::string ImageLabel(const nlohmann::json& labelled, const char* key) {
  if (!labelled.is_object()) return {};
  const auto& l = labelled.value("Labels", nlohmann::json::object());
  if (!l.is_object() || !l.contains(key) || !l[key].is_string()) return {};
  return l[key].get<std::string>();
}

NameVersions LabelPairs(const std::string& text) {
  return ReadNameVersions(nlohmann::json::parse(text, nullptr, false));
}

}  // namespace lsb::docker
