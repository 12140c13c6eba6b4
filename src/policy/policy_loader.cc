// Files and names -> Policy. Parsing itself is in policy/parser/ (document.cc).
#include "policy/policy_loader.h"

#include <cstdlib>
#include <fstream>
#include <sys/stat.h>

#include "policy/bounded_yaml.h"

namespace lsb {
namespace {

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Result<Policy> LoadPolicyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error::FromErrno("cannot read policy file " + path).Wrap("policy");
  }
  // One byte past the cap is enough for the parser to refuse it; a huge (or endless) file is
  // never read whole.
  std::string text(kYamlMaxBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return Error::FromErrno("cannot read policy file " + path).Wrap("policy");
  text.resize(static_cast<size_t>(in.gcount()));
  return ParsePolicyText(text, path);
}

std::vector<std::string> PolicySearchPath() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("LLM_SANDBOX_POLICY_DIR"); env && *env) {
    std::string list = env;
    size_t start = 0;
    while (start <= list.size()) {
      size_t colon = list.find(':', start);
      if (colon == std::string::npos) colon = list.size();
      if (colon > start) dirs.push_back(list.substr(start, colon - start));
      start = colon + 1;
    }
  }
  dirs.push_back("./policies");
  dirs.push_back("/etc/llm-sandbox/policies");
  return dirs;
}

Result<Policy> LoadPolicy(const std::string& file_or_name) {
  if (file_or_name.empty()) return Error{"policy: empty policy name; pass a file path or a policy name"};
  if (file_or_name.find('/') != std::string::npos || EndsWith(file_or_name, ".yaml") ||
      EndsWith(file_or_name, ".yml")) {
    return LoadPolicyFile(file_or_name);
  }
  std::vector<std::string> dirs = PolicySearchPath();
  for (const auto& dir : dirs) {
    for (const char* ext : {".yaml", ".yml"}) {
      std::string path = dir + "/" + file_or_name + ext;
      if (!IsRegularFile(path)) continue;
      LSB_ASSIGN_OR_RETURN(Policy policy, LoadPolicyFile(path));
      if (policy.name != file_or_name) {
        auto pos = policy.positions.find("name");
        return Error{(pos != policy.positions.end() ? pos->second.ToString() : path) + ": policy file for '" +
                     file_or_name + "' is named '" + policy.name + "'\n  hint: rename the file to " + policy.name +
                     ".yaml or set name: " + file_or_name};
      }
      return policy;
    }
  }
  std::string searched;
  for (const auto& dir : dirs) searched += (searched.empty() ? "" : ", ") + dir;
  return Error{"policy '" + file_or_name + "' not found (looked for " + file_or_name + ".yaml in " + searched +
               ")\n  hint: pass the file's path, or put the directory in LLM_SANDBOX_POLICY_DIR (or policy_dir: in "
               "~/.config/llm-sandbox/config.yaml, docs/configuration.md)",
               ENOENT};
}

}  // namespace lsb
