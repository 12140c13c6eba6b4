#include "policy/controls.h"

#include "policy/policy.h"

namespace lsb {
namespace {

#define LSB_CONTROL_ROW(id, key, section, narrowing, default_value, doc) \
  ControlInfo{Control::id, key, ControlSection::section, Narrowing::narrowing, default_value, doc},
constexpr std::array<ControlInfo, kControlCount> kControls = {LSB_POLICY_CONTROLS(LSB_CONTROL_ROW)};
#undef LSB_CONTROL_ROW

constexpr bool RowsInEnumOrder() {
  for (size_t i = 0; i < kControls.size(); ++i)
    if (static_cast<size_t>(kControls[i].id) != i) return false;
  return true;
}
static_assert(RowsInEnumOrder(), "InfoOf indexes the table by the enumerator");

}  // namespace

std::string_view ControlInfo::yaml_key() const {
  if (section == ControlSection::kTop || section == ControlSection::kBuiltIn) return key;
  size_t dot = key.find('.');
  return dot == std::string_view::npos ? key : key.substr(dot + 1);
}

const std::array<ControlInfo, kControlCount>& AllControls() { return kControls; }

const ControlInfo& InfoOf(Control control) { return kControls[static_cast<size_t>(control)]; }

std::string_view SectionName(ControlSection section) {
  switch (section) {
    case ControlSection::kTop:
    case ControlSection::kBuiltIn: return "";
    case ControlSection::kContainer: return "container";
    case ControlSection::kNetwork: return "network";
    case ControlSection::kCommands: return "commands";
    case ControlSection::kResources: return "resources";
    case ControlSection::kMonitoring: return "monitoring";
    case ControlSection::kSession: return "session";
  }
  return "";
}

std::vector<std::string> KeysOfSection(ControlSection section) {
  std::vector<std::string> keys;
  for (const ControlInfo& c : kControls)
    if (c.section == section) keys.emplace_back(c.yaml_key());
  return keys;
}

std::string ControlsMarkdown() {
  std::string out = "| control | default | a request may | what it is |\n|---|---|---|---|\n";
  for (const ControlInfo& c : kControls) {
    const char* narrowing = c.narrowing == Narrowing::kLower ? "lower it" : "-";
    out += "| `" + std::string(c.key) + "` | " + std::string(c.default_value) + " | " + narrowing + " | " +
           std::string(c.doc) + " |\n";
  }
  return out;
}

bool WrittenInPolicy(const Policy& policy, Control control) {
  const std::string key = KeyOf(control);
  // The key itself, or one under it: "container.tmpfs./tmp", "commands.allow[0]".
  for (auto it = policy.positions.lower_bound(key); it != policy.positions.end(); ++it) {
    const std::string& found = it->first;
    if (found.compare(0, key.size(), key) != 0) return false;
    if (found.size() == key.size() || found[key.size()] == '.' || found[key.size()] == '[') return true;
  }
  return false;
}

}  // namespace lsb
