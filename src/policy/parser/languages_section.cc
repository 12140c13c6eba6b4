// languages: the argv and file name a run of each language uses; built-ins may be overridden.
#include <algorithm>
#include <cctype>
#include <string>

#include "policy/languages.h"
#include "policy/parser/section_context.h"
#include "policy/parser/section_keys.h"

namespace lsb::policy_parser {

void SectionParser::Languages(const Field& f) {
  p_.positions[f.path] = r_.Pos(f.mark());
  r_.ForEachEntry(f, [&](const std::string& name, const Field& e) {
    if (name == "default") {
      if (auto s = r_.String(e)) Set(e, p_.default_language, *s);
      return;
    }
    bool ok = !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
      return std::islower(c) || std::isdigit(c) || c == '_' || c == '-' || c == '+';
    });
    if (!ok) {
      r_.Report(e.key.Mark(), "languages: '" + name + "' is not a valid language name",
                "use lower-case letters, digits, '_', '-' or '+' (e.g. python, node, cpp)");
      return;
    }
    auto builtin = BuiltinLanguages().find(name);
    Language lang = builtin != BuiltinLanguages().end() ? builtin->second : Language{name, {}, ""};
    bool have_command = false, have_file = false, bad = false;
    size_t errors_before = r_.diagnostics().size();
    r_.ForEachKnownKey(e, kLanguageKeys, [&](const Field& k) {
      if (k.key.Scalar() == "command") {
        auto items = r_.ScalarList(k);
        if (!items) return;
        have_command = true;
        lang.command.clear();
        for (const auto& item : *items) lang.command.push_back(item.value.Scalar());
        if (lang.command.empty()) {
          r_.Report(k.mark(), k.path + ": the command is empty",
                    "write command: [\"/usr/bin/ruby\", \"{file}\"] (interpreter path first)");
          bad = true;
          return;
        }
        std::string why;
        if (!IsCleanAbsolutePath(lang.command[0], &why)) {
          r_.Report((*items)[0].value.Mark(), k.path + ": the interpreter '" + lang.command[0] + "' " + why,
                    "write its absolute path first (e.g. /usr/bin/" + lang.command[0] +
                        "); it must also be in commands.allow");
          bad = true;
          return;
        }
        bool mentions_file = std::any_of(lang.command.begin(), lang.command.end(),
                                         [](const std::string& a) { return a.find("{file}") != std::string::npos; });
        if (!mentions_file) {
          r_.Report(k.mark(), k.path + ": no argument contains {file}, so the program would never be read",
                    "add \"{file}\" where the program's path goes, e.g. [\"" + lang.command[0] + "\", \"{file}\"]");
          bad = true;
          return;
        }
        p_.positions[k.path] = r_.Pos(k.mark());
      } else {
        auto s = r_.String(k);
        if (!s) return;
        if (s->find('/') != std::string::npos || *s == "." || *s == "..") {
          r_.Report(k.mark(), k.path + ": '" + *s + "' must be a plain file name", "write e.g. file: main.rb");
          bad = true;
          return;
        }
        have_file = true;
        lang.file_name = *s;
        p_.positions[k.path] = r_.Pos(k.mark());
      }
    });
    if (bad || r_.diagnostics().size() != errors_before) return;
    if (builtin == BuiltinLanguages().end() && (!have_command || !have_file)) {
      r_.Report(e.key.Mark(), "languages." + name + ": a new language needs both 'command' and 'file'",
                "write " + name + ": {command: [\"/usr/bin/" + name + "\", \"{file}\"], file: main." + name + "}");
      return;
    }
    p_.languages[name] = lang;
    p_.positions["languages." + name] = r_.Pos(e.key.Mark());
    explicit_languages_.push_back(name);
  });
}

}  // namespace lsb::policy_parser
