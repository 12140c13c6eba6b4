#include "policy/command_presets.h"

#include <set>

namespace lsb {

const std::vector<CommandPreset>& CommandPresets() {
  // Left out on purpose: chroot, nohup, stdbuf (LD_PRELOADs a library), runcon/chcon, mknod,
  // su/sudo; shells and interpreters of any kind (see the header).
  static const std::vector<CommandPreset> kPresets = {
      {"coreutils",
       "GNU coreutils: files, directories, text basics, dates, checksums",
       {"b2sum",   "base32",   "base64",    "basename", "cat",       "chmod",     "cksum",     "comm",
        "cp",      "csplit",   "cut",       "date",     "dd",        "df",        "dirname",   "du",
        "echo",    "env",      "expand",    "expr",     "factor",    "false",     "fmt",       "fold",
        "groups",  "head",     "id",        "join",     "link",      "ln",        "ls",        "md5sum",
        "mkdir",   "mktemp",   "mv",        "nice",     "nl",        "nproc",     "numfmt",    "od",
        "paste",   "pathchk",  "printenv",  "printf",   "ptx",       "pwd",       "readlink",  "realpath",
        "rm",      "rmdir",    "seq",       "sha1sum",  "sha224sum", "sha256sum", "sha384sum", "sha512sum",
        "shuf",    "sleep",    "sort",      "split",    "stat",      "sum",       "tac",       "tail",
        "tee",     "test",     "timeout",   "touch",    "tr",        "true",      "truncate",  "tsort",
        "tty",     "uname",    "unexpand",  "uniq",     "unlink",    "wc",        "whoami",    "yes"}},
      {"findutils", "find and xargs", {"find", "xargs"}},
      {"text",
       "text tools: search, edit, compare, count",
       {"awk", "cmp", "column", "comm", "cut", "diff", "diff3", "fold", "grep", "head", "iconv", "join", "nl",
        "paste", "rev", "sdiff", "sed", "sort", "tac", "tail", "tr", "uniq", "wc"}},
      {"git", "git itself (its /usr/lib/git-core helpers are not included)", {"git"}},
  };
  return kPresets;
}

const CommandPreset* FindCommandPreset(std::string_view name) {
  if (!name.empty() && name[0] == '@') name.remove_prefix(1);
  for (const auto& preset : CommandPresets())
    if (preset.name == name) return &preset;
  return nullptr;
}

std::string CommandPresetNames() {
  std::string out;
  for (const auto& preset : CommandPresets()) out += (out.empty() ? "@" : ", @") + preset.name;
  return out;
}

std::vector<std::string> PresetPaths(const CommandPreset& preset) {
  std::vector<std::string> paths;
  paths.reserve(preset.commands.size() * 2);
  for (const auto& command : preset.commands) {
    paths.push_back("/usr/bin/" + command);
    paths.push_back("/bin/" + command);
  }
  return paths;
}

void ExpandCommandPresets(Policy& policy) {
  std::set<std::string> present(policy.allow.begin(), policy.allow.end());
  const std::set<std::string> denied(policy.deny.begin(), policy.deny.end());
  for (const auto& name : policy.allow_presets) {
    const CommandPreset* preset = FindCommandPreset(name);
    if (!preset) continue;  // the parser reported it
    for (auto& path : PresetPaths(*preset)) {
      if (denied.count(path) || !present.insert(path).second) continue;
      policy.allow.push_back(std::move(path));
    }
  }
}

}  // namespace lsb
