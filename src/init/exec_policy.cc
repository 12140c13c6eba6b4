#include "init/exec_policy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <map>

#include "base/unique_fd.h"
#include "init/command_path.h"
#include "init/elf_interp.h"

namespace lsb::init {
namespace {

std::optional<std::string> RealPath(const std::string& p) {
  char buf[PATH_MAX];
  if (::realpath(p.c_str(), buf) == nullptr) return std::nullopt;
  return std::string(buf);
}

// realpath() for many entries in few directories (a preset is ~100 names in /usr/bin and /bin):
// each directory is resolved once, then an entry that is not itself a symlink is that directory
// plus its name, one lstat instead of a readlink per component. Same answers as RealPath.
class RealPathCache {
 public:
  std::optional<std::string> Resolve(const std::string& p) {
    size_t slash = p.rfind('/');
    if (slash == std::string::npos) return RealPath(p);
    std::string name = p.substr(slash + 1);
    if (name.empty() || name == "." || name == "..") return RealPath(p);
    std::string dir = slash == 0 ? "/" : p.substr(0, slash);
    auto it = dirs_.find(dir);
    if (it == dirs_.end()) it = dirs_.emplace(dir, RealPath(dir)).first;
    if (!it->second) return std::nullopt;  // no such directory: no such file
    std::string joined = (*it->second == "/" ? "" : *it->second) + "/" + name;
    struct stat st;
    if (::lstat(joined.c_str(), &st) != 0) return std::nullopt;
    if (S_ISLNK(st.st_mode)) return RealPath(joined);
    return joined;
  }

 private:
  std::map<std::string, std::optional<std::string>> dirs_;
};

std::string ReadHead(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return {};
  char buf[256];
  ssize_t n = ::read(fd.get(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

struct Support {
  std::set<std::string> elf;     // PT_INTERP files (ld.so)
  std::set<std::string> script;  // "#!" interpreters
};

// Adds what `exe` needs to start (its ELF interpreter, or its "#!" interpreter and that one's
// ELF interpreter), recursing a little for "#!" chains.
Status AddSupport(const std::string& exe, Support& support, int depth) {
  if (depth > 4) return Error{"interpreter chain too deep at " + exe};
  std::string head = ReadHead(exe);
  if (auto interp = ParseShebang(head)) {
    auto real = RealPath(*interp);
    if (!real) return Error{exe + ": its interpreter " + *interp + " does not exist in the box"};
    support.script.insert(*real);
    return AddSupport(*real, support, depth + 1);
  }
  LSB_ASSIGN_OR_RETURN(ElfInfo elf, ReadElfInfo(exe));
  if (!elf.interp.empty()) {
    auto real = RealPath(elf.interp);
    if (!real) return Error{exe + ": its ELF interpreter " + elf.interp + " does not exist in the box"};
    support.elf.insert(*real);
  }
  return OkStatus();
}

std::string_view BaseName(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// A multi-call binary that is also a shell: allowing it under another name (/bin/ls -> busybox, as
// in Alpine and similar images) would allow every applet, `busybox sh` included, so such an entry
// counts only where it names the binary itself. Matters most for presets, which name commands,
// not files.
bool IsMultiCallShell(std::string_view real) {
  std::string_view base = BaseName(real);
  return base == "busybox" || base == "toybox";
}

std::set<FileId> IdsOf(const std::set<std::string>& paths) {
  std::set<FileId> ids;
  for (const auto& p : paths) {
    struct stat st;
    if (::stat(p.c_str(), &st) == 0) ids.insert(FileId::Of(st));
  }
  return ids;
}

}  // namespace

std::string JoinPath(std::string_view base, std::string_view path) {
  std::vector<std::string_view> parts;
  auto push = [&](std::string_view s) {
    size_t i = 0;
    while (i <= s.size()) {
      size_t j = s.find('/', i);
      if (j == std::string_view::npos) j = s.size();
      std::string_view seg = s.substr(i, j - i);
      if (seg == "..") {
        if (!parts.empty()) parts.pop_back();
      } else if (!seg.empty() && seg != ".") {
        parts.push_back(seg);
      }
      i = j + 1;
    }
  };
  if (path.empty() || path[0] != '/') push(base);
  push(path);
  std::string out;
  for (auto p : parts) {
    out += '/';
    out += p;
  }
  return out.empty() ? "/" : out;
}

Result<ExecPolicy> ExecPolicy::Resolve(const std::vector<std::string>& allow,
                                       const std::vector<std::string>& deny,
                                       const std::function<void(const std::string&)>& warn,
                                       std::string_view image_path) {
  std::set<std::string> denied, denied_raw;
  for (const auto& d : deny) {
    if (d.empty() || d[0] != '/') return Error{"commands.deny: not an absolute path: " + d};
    denied_raw.insert(JoinPath("/", d));
    if (auto real = RealPath(d)) denied.insert(*real);
    if (!image_path.empty())
      if (auto found = FindOnPath(BaseName(d), image_path))
        if (auto real = RealPath(*found)) denied.insert(*real);
  }
  std::set<std::string> allowed;
  Support support;
  RealPathCache paths;
  for (const auto& a : allow) {
    if (a.empty() || a[0] != '/') return Error{"commands.allow: not an absolute path: " + a};
    auto real = paths.Resolve(a);
    if (!real && !image_path.empty())
      if (auto found = LocateCommand(a, image_path)) real = paths.Resolve(*found);
    if (!real) {
      warn("commands.allow: " + a + " does not exist in the box; skipped");
      continue;
    }
    // Another name of a file already allowed (/bin/ls and /usr/bin/ls on a merged-/usr root, as
    // presets write both): nothing more to check or add.
    if (allowed.count(*real) && !denied_raw.count(JoinPath("/", a))) continue;
    if (IsMultiCallShell(*real) && BaseName(a) != BaseName(*real)) {
      warn("commands.allow: " + a + " is " + *real + ", a multi-call binary with a shell; skipped (list " + *real +
           " itself to allow it)");
      continue;
    }
    if (denied.count(*real) || denied_raw.count(JoinPath("/", a))) {
      warn("commands.allow: " + a + " is also denied; deny wins");
      continue;
    }
    struct stat st;
    if (::stat(real->c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      warn("commands.allow: " + a + " is not a regular file; skipped");
      continue;
    }
    allowed.insert(*real);
    auto st2 = AddSupport(*real, support, 0);
    if (!st2.ok()) return st2.error().Wrap("commands.allow");
  }
  return ExecPolicy(std::move(allowed), std::move(denied), std::move(denied_raw), std::move(support.elf),
                    std::move(support.script));
}

ExecPolicy::ExecPolicy(std::set<std::string> allowed, std::set<std::string> denied, std::set<std::string> denied_raw,
                       std::set<std::string> elf_interpreters, std::set<std::string> script_interpreters)
    : allowed_(std::move(allowed)), denied_(std::move(denied)), denied_raw_(std::move(denied_raw)) {
  support_ = elf_interpreters;
  support_.insert(script_interpreters.begin(), script_interpreters.end());
  allowed_ids_ = IdsOf(allowed_);
  denied_ids_ = IdsOf(denied_);
  elf_interp_ids_ = IdsOf(elf_interpreters);
  script_interp_ids_ = IdsOf(script_interpreters);
  // An interpreter that is also allowed in its own right (python3 for pip) is a command.
  for (const auto& id : allowed_ids_) {
    elf_interp_ids_.erase(id);
    script_interp_ids_.erase(id);
  }
}

ExecDecision ExecPolicy::Decide(const std::string& raw, const FileId& file) const {
  if (denied_raw_.count(raw) || denied_ids_.count(file)) return ExecDecision{false, true, "listed in commands.deny"};
  if (allowed_ids_.count(file)) return ExecDecision{};
  if (elf_interp_ids_.count(file))
    return ExecDecision{false, false, "the ELF interpreter: it may only start allowed commands, not be run directly"};
  if (script_interp_ids_.count(file))
    return ExecDecision{false, false, "the \"#!\" interpreter of an allowed script, not in commands.allow itself"};
  return ExecDecision{false, false, "not in commands.allow"};
}

ExecDecision ExecPolicy::DecideAbsent(const std::string& raw) const {
  if (denied_raw_.count(raw)) return ExecDecision{false, true, "listed in commands.deny"};
  return ExecDecision{};
}

}  // namespace lsb::init
