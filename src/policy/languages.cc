#include "policy/languages.h"

#include <algorithm>
#include <vector>

#include "policy/suggest.h"

namespace lsb {

const std::map<std::string, Language>& BuiltinLanguages() {
  static const std::map<std::string, Language> kBuiltins = {
      {"python", {"python", {"/usr/bin/python3", "-u", "{file}"}, "main.py"}},
      {"bash", {"bash", {"/bin/bash", "{file}"}, "main.sh"}},
      {"sh", {"sh", {"/bin/sh", "{file}"}, "main.sh"}},
      {"node", {"node", {"/usr/bin/node", "{file}"}, "main.js"}},
  };
  return kBuiltins;
}

Status CheckLanguageRunnable(const Policy& policy, const Language& language) {
  if (language.command.empty()) {
    return Error{"language '" + language.name + "' has no command; set languages." + language.name + ".command"};
  }
  const std::string& interpreter = language.command[0];
  if (policy.Denies(interpreter)) {
    return Error{"language '" + language.name + "' runs " + interpreter +
                 ", which commands.deny lists; use a policy that allows it"};
  }
  if (!policy.Allows(interpreter)) {
    return Error{"language '" + language.name + "' runs " + interpreter +
                 ", which commands.allow does not list; use a policy that allows it"};
  }
  return OkStatus();
}

Result<Language> ResolveLanguage(const Policy& policy, const std::string& lang) {
  const std::string& name = lang.empty() ? policy.default_language : lang;
  const Language* language = policy.FindLanguage(name);
  if (!language) {
    std::vector<std::string> known;
    for (const auto& [key, _] : policy.languages) known.push_back(key);
    std::string guess = ClosestMatch(name, known);
    return Error{"policy '" + policy.name + "' has no language '" + name + "'" +
                 (guess.empty() ? "" : " (did you mean '" + guess + "'?)") + "; it knows: " + JoinList(known) +
                 "; add languages." + name + " to the policy to define it"};
  }
  Status runnable = CheckLanguageRunnable(policy, *language);
  if (!runnable.ok()) return runnable.error().Wrap("policy '" + policy.name + "'");
  return *language;
}

std::vector<std::string> RunnableLanguages(const Policy& policy) {
  std::vector<std::string> out;
  for (const auto& [name, language] : policy.languages)
    if (CheckLanguageRunnable(policy, language).ok()) out.push_back(name);
  return out;
}

namespace {

// ".py" of "dir/t.py"; "" for "Makefile", ".bashrc" or "-".
std::string Extension(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  size_t dot = base.rfind('.');
  if (dot == std::string::npos || dot == 0) return {};
  return base.substr(dot);
}

// Built-in extensions, most specific language first.
const std::map<std::string, std::vector<std::string>>& ExtensionLanguages() {
  static const std::map<std::string, std::vector<std::string>> kByExtension = {
      {".py", {"python"}}, {".sh", {"bash", "sh"}}, {".bash", {"bash"}},
      {".js", {"node"}},   {".mjs", {"node"}},      {".cjs", {"node"}},
  };
  return kByExtension;
}

}  // namespace

std::string InferLanguage(const Policy& policy, const std::string& path) {
  std::string ext = Extension(path);
  if (ext.empty() || path == "-") return {};
  std::vector<std::string> candidates;
  if (auto it = ExtensionLanguages().find(ext); it != ExtensionLanguages().end()) candidates = it->second;
  for (const auto& [name, language] : policy.languages) {
    if (Extension(language.file_name) == ext &&
        std::find(candidates.begin(), candidates.end(), name) == candidates.end())
      candidates.push_back(name);
  }
  if (candidates.empty()) return {};
  auto runnable = [&](const std::string& name) {
    const Language* language = policy.FindLanguage(name);
    return language && CheckLanguageRunnable(policy, *language).ok();
  };
  if (std::find(candidates.begin(), candidates.end(), policy.default_language) != candidates.end() &&
      runnable(policy.default_language))
    return policy.default_language;
  for (const auto& name : candidates)
    if (runnable(name)) return name;
  return candidates.front();  // ResolveLanguage then says why the policy cannot run it
}

}  // namespace lsb
