// commands: the executables that may run (absolute paths and @presets) and those refused.
#include <set>
#include <string>

#include "policy/command_presets.h"
#include "policy/parser/section_context.h"
#include "policy/suggest.h"

namespace lsb::policy_parser {

void SectionParser::Commands(const Field& f) {
  if (f.key.Scalar() != "allow" && f.key.Scalar() != "deny") return Unread(f);
  auto items = r_.ScalarList(f);
  if (!items) return;
  std::vector<std::string>& list = f.key.Scalar() == "allow" ? p_.allow : p_.deny;
  p_.positions[f.path] = r_.Pos(f.mark());
  std::set<std::string> seen;
  for (size_t i = 0; i < items->size(); ++i) {
    const Field& item = (*items)[i];
    const std::string& path = item.value.Scalar();
    if (!path.empty() && path[0] == '@') {
      Preset(f, item, seen);
      continue;
    }
    std::string why;
    if (!IsCleanAbsolutePath(path, &why)) {
      r_.Report(item.value.Mark(), f.path + ": '" + path + "' " + why,
                "write the executable's absolute path, e.g. /usr/bin/" +
                    path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1));
      continue;
    }
    if (!seen.insert(path).second) {
      r_.Report(item.value.Mark(), f.path + ": '" + path + "' is listed twice", "remove one of the two entries");
      continue;
    }
    p_.positions[f.path + "[" + std::to_string(list.size()) + "]"] = r_.Pos(item.value.Mark());
    list.push_back(path);
  }
}

// "@coreutils" in commands.allow: recorded here, expanded into paths after the whole file is read
// (ExpandCommandPresets), so that commands.deny, wherever it is written, wins over it.
void SectionParser::Preset(const Field& f, const Field& item, std::set<std::string>& seen) {
  const std::string& name = item.value.Scalar();
  if (f.key.Scalar() != "allow") {
    r_.Report(item.value.Mark(), f.path + ": '" + name + "': presets are for commands.allow only",
              "list the absolute paths to deny, e.g. /usr/bin/git");
    return;
  }
  if (!FindCommandPreset(name)) {
    std::vector<std::string> known;
    for (const auto& preset : CommandPresets()) known.push_back("@" + preset.name);
    std::string guess = ClosestMatch(name, known);
    r_.Report(item.value.Mark(), f.path + ": unknown preset '" + name + "'",
              (guess.empty() ? std::string() : "did you mean '" + guess + "'? ") + "the presets are: " +
                  CommandPresetNames() + " (docs/policy.md lists the commands of each)");
    return;
  }
  if (!seen.insert(name).second) {
    r_.Report(item.value.Mark(), f.path + ": '" + name + "' is listed twice", "remove one of the two entries");
    return;
  }
  p_.positions[f.path + "." + name] = r_.Pos(item.value.Mark());
  p_.allow_presets.push_back(name);
}

}  // namespace lsb::policy_parser
