// Which files the program may execute: commands.allow and commands.deny of the policy, resolved
// inside the box (symlinks followed), plus what the kernel needs to start them (ELF and "#!"
// interpreters). The same object answers the exec watch ("is this path allowed?") and tells the
// Landlock layer which files get EXECUTE. Landlock decides; the watch only refuses early and reports.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace lsb::init {

struct ExecDecision {
  bool allow = true;
  bool listed_in_deny = false;
  std::string reason;  // for the alert: "not in commands.allow", "listed in commands.deny"
};

// Lexical join: JoinPath("/tmp/a", "../b") == "/tmp/b"; an absolute `path` ignores `base`.
std::string JoinPath(std::string_view base, std::string_view path);

class ExecPolicy {
 public:
  ExecPolicy() = default;
  // `allowed` and `denied` are canonical (realpath) names; `denied_raw` the names as written.
  ExecPolicy(std::set<std::string> allowed, std::set<std::string> denied,
             std::set<std::string> denied_raw, std::set<std::string> support)
      : allowed_(std::move(allowed)), denied_(std::move(denied)), denied_raw_(std::move(denied_raw)),
        support_(std::move(support)) {}

  // Resolves allow/deny in the current root. An allowed entry that does not exist is skipped
  // (reported through `warn`); a deny entry wins over an allow entry naming the same file.
  static Result<ExecPolicy> Resolve(const std::vector<std::string>& allow,
                                    const std::vector<std::string>& deny,
                                    const std::function<void(const std::string&)>& warn);

  // `raw` is the path the program passed; `real` its canonical name, or nullopt when nothing
  // exists there (the kernel will fail the call itself, so it is let through).
  ExecDecision Decide(const std::string& raw, const std::optional<std::string>& real) const;

  const std::set<std::string>& allowed() const { return allowed_; }
  // Interpreters (ld.so, "#!" targets) that need EXECUTE for the allowed files to start; they are
  // not themselves allowed as a direct execve.
  const std::set<std::string>& support() const { return support_; }
  const std::set<std::string>& denied() const { return denied_; }

 private:
  std::set<std::string> allowed_;
  std::set<std::string> denied_;
  std::set<std::string> denied_raw_;
  std::set<std::string> support_;
};

}  // namespace lsb::init
