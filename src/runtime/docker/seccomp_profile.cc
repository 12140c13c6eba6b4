#include "runtime/docker/seccomp_profile.h"

#include <fcntl.h>
#include <seccomp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <set>

#include <nlohmann/json.hpp>

#include "base/io.h"
#include "base/unique_fd.h"
#include "protocol/escape_syscalls.h"

namespace lsb::docker {
namespace {

// Syscall numbers are below 1024 on every architecture libseccomp's native tables describe here
// (x86_64 tops out near 460); x32 and i386 names are the same names.
constexpr int kMaxSyscallNr = 1024;

Result<std::string> Build() {
  std::set<std::string> allowed;
  for (int nr = 0; nr < kMaxSyscallNr; ++nr) {
    char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
    if (!name) continue;
    std::string n = name;
    std::free(name);
    if (protocol::IsRefusedSyscall(n.c_str()) && !protocol::IsWatchedEscapeSyscall(n.c_str())) continue;
    allowed.insert(n);
  }
  if (allowed.size() < 200) return Error{"docker: libseccomp resolved only " + std::to_string(allowed.size()) +
                                         " system call names for this architecture; cannot build the profile"};
  // The native architecture only. Every process in the box runs under init's own filter, which
  // kills foreign-architecture calls (int 0x80, x32) outright, so listing i386/x32 here (as the
  // engine's default profile does) let through nothing a program could use; without them the
  // engine kills such a call itself (SIGSYS), and runc compiles one table instead of three at
  // every container start (BENCHMARKS.md, "Figures behind decisions in the code").
  nlohmann::json arches = nlohmann::json::array();
  switch (seccomp_arch_native()) {
    case SCMP_ARCH_X86_64: arches = {"SCMP_ARCH_X86_64"}; break;
    case SCMP_ARCH_AARCH64: arches = {"SCMP_ARCH_AARCH64"}; break;
    default: break;  // no list: the engine takes the native architecture only
  }
  nlohmann::json profile = {
      {"defaultAction", "SCMP_ACT_ERRNO"},
      {"defaultErrnoRet", 1},  // EPERM, as init refuses
      {"syscalls", nlohmann::json::array({{{"names", allowed}, {"action", "SCMP_ACT_ALLOW"}}})},
  };
  if (!arches.empty()) profile["architectures"] = arches;
  return profile.dump();
}

std::string ProfileDir() {
  if (::geteuid() == 0) return "/run/llm-sandbox";
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg) return std::string(xdg) + "/llm-sandbox";
  return "/tmp/llm-sandbox-" + std::to_string(::geteuid());
}

}  // namespace

Result<std::string> WriteProfileFile(const std::string& profile) {
  std::string dir = ProfileDir();
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return Error::FromErrno("mkdir " + dir);
  struct stat st{};
  if (::lstat(dir.c_str(), &st) != 0) return Error::FromErrno("stat " + dir);
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
    return Error{dir + " is not a directory owned by us; remove it and retry"};
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016zx", std::hash<std::string>{}(profile));
  std::string path = dir + "/seccomp-" + hash + ".json";
  auto have = ReadFile(path);
  if (have.ok() && *have == profile) return path;
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644));
    if (!fd) return Error::FromErrno("create " + tmp);
    if (auto w = WriteAll(fd.get(), profile); !w.ok()) {
      ::unlink(tmp.c_str());
      return w.error().Wrap("write " + tmp);
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return Error::FromErrno("rename " + tmp);
  }
  return path;
}

Result<std::string> EngineSeccompProfile() {
  static const Result<std::string> profile = Build();
  return profile;
}

}  // namespace lsb::docker
