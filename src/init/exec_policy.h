// Which files the program may execute: commands.allow and commands.deny of the policy, resolved
// inside the box (symlinks followed), plus what the kernel needs to start them (ELF and "#!"
// interpreters). The same object answers the exec watch ("is this file allowed?") and tells the
// Landlock layer which files get EXECUTE. Landlock decides; the watch only refuses early and reports.
//
// The watch asks by file identity (device and inode of the file the caller's path resolves to,
// caller_path.h), never by name: a symlink, a hard link, a /proc/<pid>/root or fd path, a relative
// name all reach the same inode. The ELF interpreter is executable for the kernel's sake only, so
// a direct run of it is refused by name of its own ("the ELF interpreter").
#pragma once

#include <sys/stat.h>

#include <compare>
#include <cstdint>
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

// A file's identity: what stays the same under every name of it.
struct FileId {
  uint64_t dev = 0;
  uint64_t ino = 0;
  static FileId Of(const struct stat& st) { return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)}; }
  auto operator<=>(const FileId&) const = default;
};

// Lexical join: JoinPath("/tmp/a", "../b") == "/tmp/b"; an absolute `path` ignores `base`.
std::string JoinPath(std::string_view base, std::string_view path);

class ExecPolicy {
 public:
  ExecPolicy() = default;
  // `allowed` and `denied` are canonical (realpath) names; `denied_raw` the names as written;
  // `elf_interpreters` the PT_INTERP files of the allowed ELFs (ld.so), `script_interpreters` the
  // "#!" interpreters of allowed scripts. Identities are taken here (stat); a name that does not
  // exist has none and is matched by name only.
  ExecPolicy(std::set<std::string> allowed, std::set<std::string> denied, std::set<std::string> denied_raw,
             std::set<std::string> elf_interpreters, std::set<std::string> script_interpreters);

  // Resolves allow/deny in the current root. An allowed entry that does not exist is skipped
  // (reported through `warn`); a deny entry wins over an allow entry naming the same file. On an
  // image root (`image_path`, its config's PATH, not empty) an entry the image lacks stands for
  // the command of its base name on that PATH (command_path.h: /usr/bin/python3 is
  // /usr/local/bin/python3 in the official Python images), and a deny entry also denies that
  // command where the image has it elsewhere: deny only grows.
  static Result<ExecPolicy> Resolve(const std::vector<std::string>& allow,
                                    const std::vector<std::string>& deny,
                                    const std::function<void(const std::string&)>& warn,
                                    std::string_view image_path = {});

  // `raw` is the path the program passed (lexically joined to its cwd, for deny-by-name); `file`
  // the identity of the regular file it resolves to in the caller's context.
  ExecDecision Decide(const std::string& raw, const FileId& file) const;
  // For a path that resolves to nothing: refused (and reported) only when commands.deny names it.
  ExecDecision DecideAbsent(const std::string& raw) const;
  // True for the ELF interpreter of an allowed command (ld.so): a process whose image is this file
  // was started by running the interpreter directly.
  bool IsElfInterpreter(const FileId& file) const { return elf_interp_ids_.count(file) > 0; }

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
  std::set<FileId> allowed_ids_, denied_ids_, elf_interp_ids_, script_interp_ids_;
};

}  // namespace lsb::init
