#include "runtime/policy_explain.h"

#include <nlohmann/json.hpp>

#include "runtime/docker/docker_controls.h"
#include "runtime/native/native_controls.h"

namespace lsb {

std::vector<ControlExplanation> ExplainPolicy(const Policy& policy) {
  std::vector<ControlExplanation> out;
  for (ControlRow& row : ControlRows(policy)) {
    Enforcement native = native::DescribeControl(row, policy);
    Enforcement docker = docker::DescribeControl(row, policy);
    out.push_back({std::move(row), std::move(native), std::move(docker)});
  }
  return out;
}

std::string FormatExplanation(const Policy& policy) {
  std::string out = "policy " + policy.name + " (" + policy.source_file + ")\n";
  if (!policy.description.empty()) {
    out += "description: " + policy.description +
           (policy.positions.count("description") ? "" : "  [(built in): policy/builtin_descriptions.cc]") + "\n";
  }
  out += "backend: " + Spelling(policy.backend) + ", runtime: " + Spelling(policy.runtime) +
         ". For each control: its setting and where it was set, then how the native and the Docker backend "
         "enforce it.\n";
  for (const auto& c : ExplainPolicy(policy)) {
    out += "\n" + c.row.label + " = " + c.row.setting + "  [" + c.row.source + "]\n";
    out += "  native: " + std::string(c.native.enforced() ? "" : "NOT ENFORCED: ") + c.native.how + "\n";
    out += "  docker: " + std::string(c.docker.enforced() ? "" : "NOT ENFORCED: ") + c.docker.how + "\n";
  }
  return out;
}

nlohmann::json ExplanationJson(const Policy& policy) {
  nlohmann::json controls = nlohmann::json::array();
  for (const auto& c : ExplainPolicy(policy)) {
    controls.push_back({{"control", c.row.label},
                        {"setting", c.row.setting},
                        {"source", c.row.source},
                        {"native", {{"enforced", c.native.enforced()}, {"how", c.native.how}}},
                        {"docker", {{"enforced", c.docker.enforced()}, {"how", c.docker.how}}}});
  }
  return {{"policy", policy.name},
          {"description", policy.description},
          {"file", policy.source_file},
          {"backend", Spelling(policy.backend)},
          {"runtime", Spelling(policy.runtime)},
          {"controls", controls}};
}

}  // namespace lsb
