// The escape program's argument guards, loaded for real in a child: personality only takes the
// harmless execution domains, unshare only the flags that make no namespace, modify_ldt is gone.
// And a fork server's zygote filter: what making a box takes runs, the rest of the escape surface
// does not.
#include <errno.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "init/seccomp_filter.h"

namespace lsb::init {
namespace {

struct Call {
  const char* what;
  long nr;
  unsigned long arg0;
  int want;  // 0 = succeeds, else the errno
};

// Runs `calls` in a child under `prog`; returns one line per call that did not give what it should.
std::string RunUnder(const std::vector<sock_filter>& prog, const std::vector<Call>& calls) {
  int p[2];
  if (::pipe(p) != 0) return "pipe";
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(p[0]);
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || LoadSeccompProgram(prog, false) < 0) ::_exit(2);
    std::string bad;
    for (const auto& c : calls) {
      long rc = ::syscall(c.nr, c.arg0, 0, 0);
      int got = rc < 0 ? errno : 0;
      if (c.nr == SYS_personality && rc >= 0) ::syscall(SYS_personality, 0UL);  // back to PER_LINUX
      if (got != c.want)
        bad += std::string(c.what) + ": got " + std::to_string(got) + ", want " + std::to_string(c.want) + "\n";
    }
    (void)!::write(p[1], bad.data(), bad.size());
    ::_exit(0);
  }
  ::close(p[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = ::read(p[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(p[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) out += "child failed: status " + std::to_string(status);
  return out;
}

// Under the escape program without the watch (a refused unshare is then a plain EPERM).
std::string RunUnderEscapeFilter(const std::vector<Call>& calls) {
  auto progs = BuildSeccompPrograms(256, SeccompOptions{false, /*watched=*/false});
  if (!progs.ok()) return progs.error().message;
  return RunUnder(progs->escape, calls);
}

TEST(SeccompGuards, PersonalityTakesOnlyTheHarmlessDomains) {
  EXPECT_EQ(RunUnderEscapeFilter({
                {"query", SYS_personality, 0xffffffffUL, 0},
                {"PER_LINUX", SYS_personality, PER_LINUX, 0},
                {"PER_LINUX32", SYS_personality, PER_LINUX32, 0},
                {"UNAME26", SYS_personality, UNAME26, 0},
                {"high bits over PER_LINUX (the kernel reads 32)", SYS_personality, 1UL << 32, 0},
                {"ADDR_NO_RANDOMIZE", SYS_personality, ADDR_NO_RANDOMIZE, EPERM},
                {"READ_IMPLIES_EXEC", SYS_personality, READ_IMPLIES_EXEC, EPERM},
                {"MMAP_PAGE_ZERO", SYS_personality, MMAP_PAGE_ZERO, EPERM},
                {"PER_LINUX32|ADDR_NO_RANDOMIZE", SYS_personality, 0x8UL | ADDR_NO_RANDOMIZE, EPERM},
                {"high bits over ADDR_NO_RANDOMIZE", SYS_personality, (1UL << 32) | ADDR_NO_RANDOMIZE, EPERM},
                {"0xfffffffe", SYS_personality, 0xfffffffeUL, EPERM},
            }),
            "");
}

TEST(SeccompGuards, UnshareRunsOnlyWhenItMakesNoNamespace) {
  EXPECT_EQ(RunUnderEscapeFilter({
                {"CLONE_FILES", SYS_unshare, CLONE_FILES, 0},
                {"CLONE_FS", SYS_unshare, CLONE_FS, 0},
                {"CLONE_FILES|CLONE_FS|CLONE_SYSVSEM", SYS_unshare, CLONE_FILES | CLONE_FS | CLONE_SYSVSEM, 0},
                {"0", SYS_unshare, 0, 0},
                {"CLONE_FS|CLONE_NEWNS", SYS_unshare, CLONE_FS | CLONE_NEWNS, EPERM},
                {"CLONE_NEWUSER", SYS_unshare, CLONE_NEWUSER, EPERM},
                {"CLONE_NEWNET", SYS_unshare, CLONE_NEWNET, EPERM},
                {"CLONE_NEWTIME", SYS_unshare, 0x80, EPERM},
                {"CLONE_NEWCGROUP", SYS_unshare, CLONE_NEWCGROUP, EPERM},
                {"an unknown high bit", SYS_unshare, (1UL << 40) | CLONE_FS, EPERM},
            }),
            "");
}

TEST(SeccompGuards, ModifyLdtIsRefused) {
  EXPECT_EQ(RunUnderEscapeFilter({{"modify_ldt read", SYS_modify_ldt, 0, EPERM},
                                  {"modify_ldt write", SYS_modify_ldt, 1, EPERM}}),
            "");
}

TEST(ZygoteFilter, MakesBoxesAndRefusesTheRestOfTheEscapeSurface) {
  auto prog = CompileZygoteFilter();
  ASSERT_TRUE(prog.ok()) << prog.error().message;
  if (::geteuid() != 0) GTEST_SKIP() << "new namespaces need root here";
  EXPECT_EQ(RunUnder(*prog, {
                // What making a box takes: its namespaces (user first: then the rest are its).
                {"unshare user+mount+net+pid", SYS_unshare,
                 CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS, 0},
                // The watched escapes: TRACE, so ENOSYS with no tracer (a box's watch answers first).
                {"bpf", SYS_bpf, 0, ENOSYS},
                {"keyctl", SYS_keyctl, 0, ENOSYS},
                {"ptrace", SYS_ptrace, 0, ENOSYS},
                {"setns", SYS_setns, 0, ENOSYS},
                {"init_module", SYS_init_module, 0, ENOSYS},
                // The rest: EPERM.
                {"perf_event_open", SYS_perf_event_open, 0, EPERM},
                {"userfaultfd", SYS_userfaultfd, 0, EPERM},
                {"io_uring_setup", SYS_io_uring_setup, 0, EPERM},
                {"memfd_create", SYS_memfd_create, 0, EPERM},
                {"syslog", SYS_syslog, 0, EPERM},
            }),
            "");
}

}  // namespace
}  // namespace lsb::init
