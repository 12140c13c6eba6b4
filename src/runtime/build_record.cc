#include "runtime/build_record.h"

#include <nlohmann/json.hpp>

namespace lsb {

Result<BuildRecord> ParseBuildRecord(const std::string& text, const std::string& origin,
                                     const std::string& reference) {
  using nlohmann::json;
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error{"the build record " + origin + " is not JSON"};
  BuildRecord r;
  r.reference = j.value("reference", reference);
  r.policy = j.value("policy", "");
  r.source_file = j.value("source_file", "");
  r.base = j.value("base", "");
  r.base_digest = j.value("base_digest", "");
  r.python = j.value("python", "");
  for (const auto& s : j.value("steps", json::array())) r.steps.push_back(s.get<std::string>());
  r.packages = ReadNameVersions(j.value("packages", json::array()));
  r.apt = ReadNameVersions(j.value("apt", json::array()));
  return r;
}

}  // namespace lsb
