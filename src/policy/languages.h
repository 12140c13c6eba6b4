// Languages: how a program in language X is run (argv with "{file}" and the file's name), and the
// check that the policy lets that interpreter run at all.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/result.h"
#include "policy/policy.h"

namespace lsb {

// python: /usr/bin/python3 -u {file} (main.py); bash: /bin/bash {file} (main.sh);
// sh: /bin/sh {file} (main.sh); node: /usr/bin/node {file} (main.js). A policy's `languages:`
// section overrides or adds to these.
const std::map<std::string, Language>& BuiltinLanguages();

// Why `language` cannot run under `policy` (unknown, or its interpreter command[0] is denied or
// not allowed), or OkStatus.
Status CheckLanguageRunnable(const Policy& policy, const Language& language);

// The language a run uses: `lang`, or the policy's default when `lang` is empty. Errors when the
// policy does not know it or does not let its interpreter run, e.g. "language 'bash' runs
// /bin/bash, which commands.deny lists; use a policy that allows it".
Result<Language> ResolveLanguage(const Policy& policy, const std::string& lang);

// The languages `policy` can run (interpreter allowed, not denied), in name order.
std::vector<std::string> RunnableLanguages(const Policy& policy);

// The language of the program file `path` by its extension, for a run that names none: .py python,
// .sh bash (sh when the policy cannot run bash but can sh), .bash bash, .js/.mjs/.cjs node, and the
// extension of any language's file name in the policy (languages.X.file: main.rb -> .rb). Among
// several, the policy's default wins, then the first it can run. "" when the extension says
// nothing (none, unknown, or "-" for stdin): the policy's default language applies then.
std::string InferLanguage(const Policy& policy, const std::string& path);

}  // namespace lsb
