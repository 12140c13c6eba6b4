// The policy parser's shared state: the YAML reader collecting diagnostics, the Policy being
// filled, and the helpers every section uses. Each YAML section's methods are defined in its own
// file (container_section.cc, network_section.cc, ...); document.cc drives them in file order.
// Each field is read on its own here; checks across fields live in policy/policy_checks.cc.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "base/result.h"
#include "policy/build_rules.h"
#include "policy/controls.h"
#include "policy/policy.h"
#include "policy/yaml_reader.h"

namespace lsb::policy_parser {

// "/usr/bin/python3" yes; "python3", "/usr//bin", "/usr/bin/../bin/sh", "/tmp/" no. Sets `why`.
bool IsCleanAbsolutePath(const std::string& path, std::string* why);
// `path` is `dir` or below it.
bool IsUnder(const std::string& path, const std::string& dir);

class SectionParser {
 public:
  SectionParser(YamlReader& reader, Policy& policy) : r_(reader), p_(policy) {}

  // The whole document (document.cc): the top-level keys, each section in file order.
  void Document(const YAML::Node& root);

  // Languages the file wrote (policy_checks.cc checks their interpreters against commands.allow).
  const std::vector<std::string>& explicit_languages() const { return explicit_languages_; }

 private:
  // Shared helpers (section_context.cc).
  template <typename T>
  void Set(const Field& f, T& slot, T value) {
    slot = std::move(value);
    p_.positions[f.path] = r_.Pos(f.mark());
  }
  // What is wrong with a value: Bad's message (after the field's path) and hint.
  struct Problem {
    std::string message;
    std::string hint;
  };
  // Sets `slot` to the value read (nullopt: reported already) unless `check` finds a Problem,
  // which is reported instead; the read-check-set most scalar controls follow.
  template <typename T, typename Check>
  void SetIfValid(const Field& f, T& slot, std::optional<T> value, Check check) {
    if (!value) return;
    if (std::optional<Problem> problem = check(*value)) return Bad(f, problem->message, problem->hint);
    Set(f, slot, std::move(*value));
  }
  // A control with no check of its own (section_context.cc's table) read into its Policy field;
  // false if `f` is none. Document() asks it first, so the sections see only the other keys.
  bool SetPlain(const Field& f);
  // One of `options`, with a did-you-mean for a near miss; `note` ends the hint.
  void Choice(const Field& f, const std::vector<std::string>& options, std::string& slot, const std::string& note);
  void Bad(const Field& f, const std::string& message, const std::string& hint);
  // A key its section's list takes (a controls.h row) that no code here reads: refused, so a row
  // added without its parsing fails closed instead of being ignored.
  void Unread(const Field& f);

  // The top level (document.cc).
  void Version(const Field& f);
  void Name(const Field& f);

  // container (container_section.cc, container_mounts.cc).
  void Container(const Field& f);
  void User(const Field& f);
  void Env(const Field& f);
  void Tmpfs(const Field& f);
  void Mounts(const Field& f);

  // container.build (build_section.cc).
  void Build(const Field& f);
  void BuildList(const Field& f, std::vector<std::string>& out, const std::function<Status(std::string_view)>& check,
                 const std::string& hint);
  void BuildFiles(const Field& f);
  void BuildTimeout(const Field& f);
  void BuildSize(const Field& f, const std::string& key);
  void BuildNetworkDefaults(const Field& f);
  bool Reaches(const IndexUrl& url) const;

  // network (network_section.cc); NetworkList serves container.build.network too.
  void Network(const Field& f);
  void NetworkList(const Field& f, std::vector<std::string>& list);
  void Secrets(const Field& f);
  void SecretField(const Field& k, NetworkSecret& secret);

  // commands (commands_section.cc).
  void Commands(const Field& f);
  void Preset(const Field& f, const Field& item, std::set<std::string>& seen);

  // languages (languages_section.cc).
  void Languages(const Field& f);

  // resources, monitoring, session (one file each).
  void Resources(const Field& f);
  void Monitoring(const Field& f);
  void SessionSetup(const Field& f);

  YamlReader& r_;
  Policy& p_;
  std::vector<std::string> explicit_languages_;
};

}  // namespace lsb::policy_parser
