// Named command sets for commands.allow ("@coreutils", "@text", ...), so a policy author does not
// list fifty paths. This table is the only place a preset's commands are written down; docs/policy.md
// copies it and a unit test keeps the two equal.
//
// A preset is expanded by the loader into plain absolute paths, each command as /usr/bin/NAME and
// /bin/NAME: llm-sandbox-init resolves every allow entry with realpath() inside the box, so on a
// merged-/usr root (Debian 12, the host here) both names are the same file and count once, and on
// an older root the one that exists is used; a name the image lacks is skipped there ("does not
// exist in the box"), as a hand-written entry would be. commands.deny still wins over a preset.
//
// No preset names a shell or an interpreter (sh, bash, python3, perl, busybox...): what a policy
// may run as a program stays what it lists by hand. Some preset commands start other programs
// (env, nice, timeout, xargs, find -exec, awk's system(), sed's e); each such exec is judged by
// Landlock and the exec watch like any other, so they reach only what the policy allows.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "policy/policy.h"

namespace lsb {

struct CommandPreset {
  std::string name;                   // without the '@'
  std::string summary;                // one line, for explain and errors
  std::vector<std::string> commands;  // bare command names, e.g. "mkdir"
};

// Every preset, in the order docs/policy.md lists them.
const std::vector<CommandPreset>& CommandPresets();

// `name` with or without its leading '@'; nullptr when there is no such preset.
const CommandPreset* FindCommandPreset(std::string_view name);

// "@coreutils, @findutils, @git, @text": for the error that names the valid ones.
std::string CommandPresetNames();

// The absolute paths a preset stands for: /usr/bin/NAME and /bin/NAME for each command.
std::vector<std::string> PresetPaths(const CommandPreset& preset);

// Appends the paths of every preset in `policy.allow_presets` to `policy.allow`: each once, after the
// hand-written entries, and none that commands.deny names (deny wins over a preset; a hand-written
// entry that is also denied stays, for the loader's "both allowed and denied" error).
void ExpandCommandPresets(Policy& policy);

}  // namespace lsb
