#include "runtime/docker/build_labels.h"

namespace lsb::docker {

std::string ImageLabel(const nlohmann::json& labelled, const char* key) {
  if (!labelled.is_object()) return {};
  const auto& l = labelled.value("Labels", nlohmann::json::object());
  if (!l.is_object() || !l.contains(key) || !l[key].is_string()) return {};
  return l[key].get<std::string>();
}

std::vector<std::pair<std::string, std::string>> LabelPairs(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  nlohmann::json list = nlohmann::json::parse(text, nullptr, false);
  if (!list.is_array()) return out;
  for (const auto& p : list)
    if (p.is_array() && p.size() == 2 && p[0].is_string() && p[1].is_string())
      out.emplace_back(p[0].get<std::string>(), p[1].get<std::string>());
  return out;
}

}  // namespace lsb::docker
