// The CLI's config file (issue 37: outside the repository the CLI needed three environment
// variables). Read, in order, $LLM_SANDBOX_CONFIG's files (colon-separated) alone when set, else
// ${XDG_CONFIG_HOME:-~/.config}/llm-sandbox/config.yaml then /etc/llm-sandbox/config.yaml: the
// user's file wins over /etc's key by key, an environment variable wins over both, and a command
// line flag (read later, by each command) wins over everything. Each key stands for one variable
// (policy_dir = $LLM_SANDBOX_POLICY_DIR, ...): a key is applied by setting its variable when it is
// unset, so every reader of the variable sees it with no change. A relative path is taken from the
// file's directory. An unknown key, a non-scalar value or bad YAML is an error naming the file.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace lsb::cli {

struct ConfigKey {
  std::string_view key;  // in the file: "policy_dir"
  std::string_view env;  // the variable it stands for: "LLM_SANDBOX_POLICY_DIR"
  bool path;             // a path (or, for policy_dir, a colon-separated list of them)
};
const std::vector<ConfigKey>& ConfigKeys();

// The files read, most important first.
std::vector<std::string> ConfigFilePaths();

// KEY -> value per `files` (most important first; a missing file is skipped), as variable
// assignments ("LLM_SANDBOX_POLICY_DIR", "/abs/dir"), the first file's value of a key winning.
Result<std::vector<std::pair<std::string, std::string>>> ReadConfigFiles(const std::vector<std::string>& files);

// ReadConfigFiles(ConfigFilePaths()), each assignment made only when its variable is unset or empty.
Status ApplyConfigFiles();

}  // namespace lsb::cli
