// The keys each mapping of a policy takes; the parser refuses any other, with a did-you-mean.
// A section's keys are its controls' (controls.h, KeysOfSection): a row added there is known to the
// parser at once, and a section parser that does not read it refuses it (SectionParser::Unread).
// The sub-objects' keys below are no controls of their own, so they are listed here.
#pragma once

#include <string>
#include <vector>

#include "policy/controls.h"

namespace lsb::policy_parser {

// version, name and description (no controls: they name the policy), the top-level controls
// (languages, backend) and every section's name.
const std::vector<std::string>& TopKeys();
// The section's control keys, in the table's order.
const std::vector<std::string>& SectionKeys(ControlSection section);

inline const std::vector<std::string> kBuildKeys = {"pip", "pip_index_url", "apt", "apt_sources", "files", "run", "network", "timeout", "memory", "output", "disk"};
inline const std::vector<std::string> kBuildNetworkKeys = {"allow", "deny"};
inline const std::vector<std::string> kSecretKeys = {"host", "header", "value"};
inline const std::vector<std::string> kLanguageKeys = {"command", "file"};
inline const std::vector<std::string> kMountKeys = {"source", "target", "mode", "size"};

}  // namespace lsb::policy_parser
