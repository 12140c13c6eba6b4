#include "policy/languages.h"

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

}  // namespace lsb
