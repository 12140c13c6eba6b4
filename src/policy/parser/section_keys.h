// The keys each mapping of a policy takes; the parser refuses any other, with a did-you-mean.
#pragma once

#include <string>
#include <vector>

namespace lsb::policy_parser {

inline const std::vector<std::string> kTopKeys = {"version",  "name",      "description", "backend",   "container",
                                                  "network",  "commands",  "languages",   "resources", "monitoring",
                                                  "session"};
inline const std::vector<std::string> kSessionKeys = {"setup"};
inline const std::vector<std::string> kContainerKeys = {"image",   "runtime", "gvisor_accept_weaker", "read_only", "tmpfs", "mounts",
                                                        "user_namespace", "seccomp", "user", "workdir", "env", "pull", "build"};
inline const std::vector<std::string> kBuildKeys = {"pip", "pip_index_url", "apt", "apt_sources", "files", "run", "network", "timeout", "memory", "output", "disk"};
inline const std::vector<std::string> kBuildNetworkKeys = {"allow", "deny"};
inline const std::vector<std::string> kNetworkKeys = {"enabled", "allow", "deny", "secrets"};
inline const std::vector<std::string> kSecretKeys = {"host", "header", "value"};
inline const std::vector<std::string> kCommandsKeys = {"allow", "deny"};
inline const std::vector<std::string> kResourcesKeys = {"cpu",    "memory",     "timeout",   "pids",
                                                        "output", "open_files", "file_size", "timeout_grace"};
inline const std::vector<std::string> kMonitoringKeys = {"trace", "alerts"};
inline const std::vector<std::string> kLanguageKeys = {"command", "file"};
inline const std::vector<std::string> kMountKeys = {"source", "target", "mode", "size"};

}  // namespace lsb::policy_parser
