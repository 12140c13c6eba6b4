#include "policy/parser/section_keys.h"

#include <array>
#include <map>

namespace lsb::policy_parser {
namespace {

// The sections, in the order the top level lists them.
constexpr std::array kSections = {ControlSection::kContainer, ControlSection::kNetwork,  ControlSection::kCommands,
                                  ControlSection::kResources, ControlSection::kMonitoring, ControlSection::kSession};

}  // namespace

const std::vector<std::string>& TopKeys() {
  static const std::vector<std::string> keys = [] {
    // Structural keys: they name and describe the policy, and control nothing.
    std::vector<std::string> all = {"version", "name", "description"};
    for (const std::string& key : KeysOfSection(ControlSection::kTop)) all.push_back(key);
    for (ControlSection section : kSections) all.emplace_back(SectionName(section));
    return all;
  }();
  return keys;
}

const std::vector<std::string>& SectionKeys(ControlSection section) {
  // Built once per section; the table does not change while the program runs.
  static const std::map<ControlSection, std::vector<std::string>> keys = [] {
    std::map<ControlSection, std::vector<std::string>> all;
    for (ControlSection s : kSections) all[s] = KeysOfSection(s);
    return all;
  }();
  static const std::vector<std::string> none;
  auto it = keys.find(section);
  return it == keys.end() ? none : it->second;
}

}  // namespace lsb::policy_parser
