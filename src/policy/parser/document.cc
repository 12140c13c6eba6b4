// YAML text -> Policy: the top-level document (version, name, each section in file order), then
// the steps after the whole file is read (presets expanded, defaults applied, checks across fields).
#include <algorithm>
#include <optional>
#include <set>
#include <cctype>
#include <sstream>
#include <string_view>
#include <tuple>

#include <yaml-cpp/yaml.h>

#include "policy/bounded_yaml.h"
#include "policy/builtin_descriptions.h"
#include "policy/command_presets.h"
#include "policy/languages.h"
#include "policy/parser/section_context.h"
#include "policy/parser/section_keys.h"
#include "policy/policy_checks.h"
#include "policy/policy_loader.h"

namespace lsb {
namespace policy_parser {

void SectionParser::Document(const YAML::Node& root) {
  Field top{"", YAML::Node(), root};
  if (!root || root.IsNull()) {
    r_.Report(SourcePos{r_.file(), 1, 1}, "the policy is empty",
              "start from policies/code-sandbox.yaml; a policy needs at least version: \"1.0\" and name:");
    return;
  }
  if (!root.IsMap()) {
    r_.Report(root.Mark(), "a policy is a mapping of sections, got " + YamlReader::KindOf(root),
              "start from policies/code-sandbox.yaml (version, name, container, network, commands, resources)");
    return;
  }
  // The sections read key by key against their controls' keys (section_keys.h).
  using Reader = void (SectionParser::*)(const Field&);
  static constexpr struct {
    std::string_view key;
    ControlSection section;
    Reader read;
  } kSections[] = {
      {"container", ControlSection::kContainer, &SectionParser::Container},
      {"network", ControlSection::kNetwork, &SectionParser::Network},
      {"commands", ControlSection::kCommands, &SectionParser::Commands},
      {"resources", ControlSection::kResources, &SectionParser::Resources},
      {"monitoring", ControlSection::kMonitoring, &SectionParser::Monitoring},
      {"session", ControlSection::kSession, &SectionParser::SessionSetup},
  };
  bool have_version = false, have_name = false;
  auto read_key = [&](const Field& f) {
    const std::string& key = f.path;
    if (SetPlain(f)) return;
    for (const auto& s : kSections) {
      if (key != s.key) continue;
      return r_.ForEachKnownKey(f, SectionKeys(s.section), [&](const Field& c) {
        if (!SetPlain(c)) (this->*s.read)(c);
      });
    }
    if (key == "version") {
      have_version = true;
      Version(f);
    } else if (key == "name") {
      have_name = true;
      Name(f);
    } else if (key == "backend") {
      std::string text;
      Choice(f, BackendKindSpellings(), text, "auto lets llm-sandbox pick one at run time");
      if (auto kind = ParseBackendKind(text)) p_.backend = *kind;
    } else if (key == "languages") {
      Languages(f);
    } else {
      Unread(f);
    }
  };
  // A misspelled section ("contaner:") is read as the one it was close to, so the errors inside it
  // show in the same pass instead of after the name is fixed.
  std::set<std::string> read_as;  // once each: two misspellings of one section are not read twice
  auto as_section = [&](const std::string& guess, const Field& f) -> std::string {
    bool section = guess == "languages";
    for (const auto& s : kSections) section |= guess == s.key;
    if (!section || root[guess] || !read_as.insert(guess).second) return "";
    read_key(f);
    return "; its contents were checked as '" + guess + "'";
  };
  r_.ForEachKnownKey(top, TopKeys(), read_key, as_section);
  if (!have_version) {
    r_.Report(root.Mark(), "missing key 'version'", "add version: \"1.0\" at the top of the file");
  }
  if (!have_name) {
    r_.Report(root.Mark(), "missing key 'name'",
              "add name: NAME at the top; a policy is looked up by name as NAME.yaml");
  }
}

void SectionParser::Version(const Field& f) {
  SetIfValid(f, p_.version, r_.String(f), [](const std::string& s) -> std::optional<Problem> {
    if (s == "1.0") return std::nullopt;
    return Problem{"unsupported policy version '" + s + "'", "this llm-sandbox reads version \"1.0\"; write version: \"1.0\""};
  });
}

void SectionParser::Name(const Field& f) {
  SetIfValid(f, p_.name, r_.String(f), [](const std::string& s) -> std::optional<Problem> {
    bool ok = s.size() <= 64 && std::isalnum(static_cast<unsigned char>(s[0])) &&
              std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isalnum(c) || c == '-' || c == '_' || c == '.'; });
    if (ok) return std::nullopt;
    return Problem{"'" + s + "' is not a valid policy name",
                   "use letters, digits, '-', '_' and '.', starting with a letter or digit, at most 64 "
                   "characters (it names the file NAME.yaml)"};
  });
}

}  // namespace policy_parser

namespace {

constexpr uint64_t kDefaultMemory = 512ull << 20;
constexpr double kDefaultCpu = 1.0;

// File order reads best: a person fixes a file top to bottom.
void SortByPosition(std::vector<PolicyDiagnostic>& diagnostics) {
  std::stable_sort(diagnostics.begin(), diagnostics.end(), [](const PolicyDiagnostic& a, const PolicyDiagnostic& b) {
    return std::tie(a.pos.line, a.pos.column) < std::tie(b.pos.line, b.pos.column);
  });
}

// YAML text -> one document's root; nullopt once a diagnostic says why there is none.
std::optional<YAML::Node> LoadOneDocument(std::string_view yaml_text, YamlReader& reader) {
  try {
    // Over a size, depth or node limit: refused before yaml-cpp builds (or recurses into) anything.
    // A syntax error throws here as it would from YAML::Load, and is reported below.
    YamlShape shape = ScanYaml(yaml_text);
    if (shape.refused) {
      reader.Report(shape.refused->mark, "the policy is refused: " + shape.refused->message,
                    "a policy is a few levels of plain mappings and lists; check for runaway [ or { or a "
                    "generated file");
      return std::nullopt;
    }
    YAML::Node root = YAML::Load(std::string(yaml_text));
    // YAML::Load alone would silently drop everything after the first "---".
    if (shape.documents > 1) {
      reader.Report(shape.second, "the file holds " + std::string(shape.documents > 2 ? "3 or more" : "2") +
                                      " YAML documents (or a stray ',' outside [ ] or { })",
                    "keep one policy per file (remove the second '---' and what follows)");
      return std::nullopt;
    }
    return root;
  } catch (const YAML::ParserException& e) {
    reader.Report(e.mark, "YAML syntax error: " + e.msg,
                  "check the indentation (spaces, not tabs) and quoting near here; a mapping is 'key: value' "
                  "with a space after the colon");
  } catch (const YAML::Exception& e) {
    reader.Report(e.mark, "YAML error: " + e.msg, "check the file is valid YAML");
  }
  return std::nullopt;
}

}  // namespace

PolicyParse ParsePolicyDetailed(std::string_view yaml_text, const std::string& file_name) {
  PolicyParse out;
  YamlReader reader(file_name, yaml_text);
  std::optional<YAML::Node> root = LoadOneDocument(yaml_text, reader);
  if (!root) {
    out.diagnostics = reader.diagnostics();
    return out;
  }

  Policy policy;
  policy.source_file = file_name;
  {
    size_t slash = file_name.rfind('/');
    policy.build.policy_dir = slash == std::string::npos ? "." : slash == 0 ? "/" : file_name.substr(0, slash);
  }
  policy.cpu = kDefaultCpu;
  policy.memory_bytes = kDefaultMemory;
  policy.image = "host";
  policy.languages = BuiltinLanguages();
  policy_parser::SectionParser parser(reader, policy);
  parser.Document(*root);
  if (!reader.diagnostics().empty()) {
    out.diagnostics = reader.diagnostics();
    SortByPosition(out.diagnostics);
    return out;
  }
  ExpandCommandPresets(policy);
  ApplyBuiltinDescription(policy);
  // Left out: commands.allow is the default language's interpreter, so a minimal policy runs.
  if (!policy.positions.count("commands.allow")) {
    if (const Language* lang = policy.FindLanguage(policy.default_language); lang && !lang->command.empty()) {
      policy.allow.push_back(lang->command[0]);
    }
  }
  out.diagnostics = CheckPolicyConsistency(policy, parser.explicit_languages());
  SortByPosition(out.diagnostics);
  if (out.diagnostics.empty()) out.policy = std::move(policy);
  return out;
}

Result<Policy> ParsePolicyText(std::string_view yaml_text, const std::string& file_name) {
  PolicyParse parsed = ParsePolicyDetailed(yaml_text, file_name);
  if (!parsed.policy) return Error{FormatDiagnostics(parsed.diagnostics)};
  return std::move(*parsed.policy);
}

}  // namespace lsb
