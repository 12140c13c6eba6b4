#include "cli/config_file.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>

#include <yaml-cpp/yaml.h>

#include "policy/bounded_yaml.h"
#include "policy/suggest.h"

namespace lsb::cli {
namespace {

constexpr size_t kMaxConfigBytes = 64 * 1024;  // a few lines; anything larger is not this file

std::string DirOf(const std::string& file) {
  size_t slash = file.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : file.substr(0, slash);
}

// "images.yaml" in /home/u/.config/llm-sandbox -> /home/u/.config/llm-sandbox/images.yaml; for a
// list (policy_dir) each colon-separated entry so.
std::string Absolute(const std::string& value, const std::string& dir) {
  std::string out;
  size_t start = 0;
  while (start <= value.size()) {
    size_t colon = value.find(':', start);
    if (colon == std::string::npos) colon = value.size();
    std::string part = value.substr(start, colon - start);
    if (!part.empty() && part[0] != '/') part = dir + "/" + part;
    out += (start ? ":" : "") + part;
    start = colon + 1;
  }
  return out;
}

std::string At(const std::string& file, const YAML::Mark& m) {
  return file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

Error Bad(const std::string& file, const YAML::Mark& m, const std::string& what, const std::string& hint) {
  return Error::InvalidArgument("config", At(file, m) + ": " + what + "\n  hint: " + hint);
}

// One file's keys into `out` (a key already there, from a more important file, is kept).
Status ReadOne(const std::string& file, std::vector<std::pair<std::string, std::string>>& out,
               std::set<std::string>& taken) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return OkStatus();  // no such file: nothing configured there
  std::string text(kMaxConfigBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxConfigBytes)
    return Error::InvalidArgument("config", file + ": larger than 64 KiB; the config file holds a few keys");
  // Bounded like a policy (depth, nodes): a runaway file is refused before yaml-cpp recurses into it.
  auto loaded = LoadBoundedYaml(text, file);
  if (!loaded.ok())
    return Error::InvalidArgument("config", loaded.error().message + "\n  hint: write one 'key: value' per line "
                                                                       "(docs/configuration.md)");
  const YAML::Node root = *loaded;
  if (!root || root.IsNull()) return OkStatus();
  if (!root.IsMap()) return Bad(file, root.Mark(), "expected 'key: value' lines", "see docs/configuration.md");
  std::vector<std::string> known;
  for (const ConfigKey& k : ConfigKeys()) known.emplace_back(k.key);
  for (auto it = root.begin(); it != root.end(); ++it) {
    const YAML::Node key = it->first, value = it->second;
    std::string name = key.IsScalar() ? key.Scalar() : "";
    const ConfigKey* found = nullptr;
    for (const ConfigKey& k : ConfigKeys()) found = k.key == name ? &k : found;
    if (!found) {
      std::string guess = ClosestMatch(name, known);
      return Bad(file, key.Mark(), "unknown key '" + name + "'",
                 (guess.empty() ? "" : "did you mean '" + guess + "'? ") + "known keys: " + JoinList(known));
    }
    if (!value.IsScalar() || value.Scalar().empty())
      return Bad(file, value.Mark().is_null() ? key.Mark() : value.Mark(), name + ": expected one value",
                 "write '" + name + ": VALUE' on one line");
    if (!taken.insert(name).second) continue;  // a more important file set it
    std::string v = found->path ? Absolute(value.Scalar(), DirOf(file)) : value.Scalar();
    out.emplace_back(std::string(found->env), v);
  }
  return OkStatus();
}

}  // namespace

const std::vector<ConfigKey>& ConfigKeys() {
  static const std::vector<ConfigKey> keys = {
      {"policy_dir", "LLM_SANDBOX_POLICY_DIR", true},   {"images", "LLM_SANDBOX_IMAGES", true},
      {"state_dir", "LLM_SANDBOX_STATE_DIR", true},     {"image_store", "LLM_SANDBOX_IMAGE_STORE", true},
      {"image_store_max", "LLM_SANDBOX_IMAGE_STORE_MAX", false},
      {"audit_log", "LLM_SANDBOX_AUDIT_LOG", true},     {"backend", "LLM_SANDBOX_BACKEND", false},
      {"node", "LLM_SANDBOX_NODE", false},              {"docker_images", "LLM_SANDBOX_DOCKER_IMAGES", false},
  };
  return keys;
}

std::vector<std::string> ConfigFilePaths() {
  std::vector<std::string> files;
  if (const char* only = std::getenv("LLM_SANDBOX_CONFIG"); only && *only) {
    std::string list = only;
    for (size_t start = 0, colon; start <= list.size(); start = colon + 1) {
      colon = std::min(list.find(':', start), list.size());
      if (colon > start) files.push_back(list.substr(start, colon - start));
    }
    return files;
  }
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  const char* home = std::getenv("HOME");
  if (xdg && *xdg == '/') {
    files.push_back(std::string(xdg) + "/llm-sandbox/config.yaml");
  } else if (home && *home) {
    files.push_back(std::string(home) + "/.config/llm-sandbox/config.yaml");
  }
  files.emplace_back("/etc/llm-sandbox/config.yaml");
  return files;
}

Result<std::vector<std::pair<std::string, std::string>>> ReadConfigFiles(const std::vector<std::string>& files) {
  std::vector<std::pair<std::string, std::string>> out;
  std::set<std::string> taken;
  for (const std::string& file : files) LSB_TRY(ReadOne(file, out, taken));
  return out;
}

Status ApplyConfigFiles() {
  LSB_ASSIGN_OR_RETURN(auto assignments, ReadConfigFiles(ConfigFilePaths()));
  for (const auto& [env, value] : assignments) {
    const char* now = std::getenv(env.c_str());
    if (now && *now) continue;  // the environment wins over the files
    if (::setenv(env.c_str(), value.c_str(), 1) != 0) return Error::FromErrno("config: set " + env);
  }
  return OkStatus();
}

}  // namespace lsb::cli
