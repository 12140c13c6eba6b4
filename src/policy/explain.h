// `policy explain`, the policy's half: per control of the table (policy/controls.h), its setting in
// words and where it was set. How each backend enforces it is the backend's to say
// (runtime/policy_explain.h puts the two together).
#pragma once

#include <string>
#include <vector>

#include "policy/controls.h"
#include "policy/policy.h"

namespace lsb {

// One line of `policy explain`: a control, or one item of it (a tmpfs mount, a host mount, a
// command preset), with its setting.
struct ControlRow {
  Control control;
  std::string label;    // "resources.memory", "container.tmpfs /tmp", "commands.allow @coreutils"
  std::string setting;  // the value in words: "256Mi (268435456 bytes)"
  std::string source;   // "file:line:column", "(default)", or "(built in)"
  std::string item;     // the tmpfs path, mount target or preset the row is about; "" for the whole control
};

// The rows of `policy`, in the table's order: every control the policy has, and the items of those
// that are lists (a control left out of the policy appears with its default).
std::vector<ControlRow> ControlRows(const Policy& policy);

// Where the policy set `key`: "file:line:column", or "(default)".
std::string SourceOf(const Policy& policy, const std::string& key);

}  // namespace lsb
