// init's in_place check of container.mounts (init/mounts.h CheckHostView): on Docker the engine
// binds the daemon's view of a host directory, and init refuses to run the program unless each
// target really is that view. Mounts made for real in a fresh user+mount namespace, as an
// unprivileged user: what the engine could hand instead (no mount, a writable or executable one,
// a plain tmpfs where an overlay belongs) is refused; the real shapes pass.
#include <gtest/gtest.h>
#include <grp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "init/mounts.h"
#include "protocol/messages.h"

namespace lsb::init {
namespace {

// 0: as expected; otherwise the number of the case that was not.
int Cases(const std::string& base) {
  auto spec = [](const std::string& target, const std::string& mode) {
    protocol::MountSpec m;
    m.source = "/host/project";
    m.target = target;
    m.mode = mode;
    return m;
  };
  auto refused = [&](const std::string& target, const std::string& mode, const char* words) {
    auto st = CheckHostView(spec(target, mode));
    if (st.ok()) return false;
    std::fprintf(stderr, "  %s (%s): %s\n", target.c_str(), mode.c_str(), st.error().message.c_str());
    return st.error().message.find(words) != std::string::npos;
  };
  auto passes = [&](const std::string& target, const std::string& mode) {
    auto st = CheckHostView(spec(target, mode));
    if (!st.ok()) std::fprintf(stderr, "  unexpected: %s\n", st.error().message.c_str());
    return st.ok();
  };
  const unsigned long safe = MS_NOSUID | MS_NODEV | MS_NOEXEC;
  if (::mount("tmpfs", (base + "/exec").c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=1m") != 0) return 90;
  if (::mount("tmpfs", (base + "/rw").c_str(), "tmpfs", safe, "size=1m") != 0) return 91;
  if (::mount("tmpfs", (base + "/ro").c_str(), "tmpfs", safe | MS_RDONLY, "size=1m") != 0) return 92;
  if (::mount("tmpfs", (base + "/scratch").c_str(), "tmpfs", safe, "size=1m") != 0) return 93;
  if (::mkdir((base + "/scratch/upper").c_str(), 0755) != 0 || ::mkdir((base + "/scratch/work").c_str(), 0700) != 0) {
    std::perror("mkdir upper/work");
    return 95;
  }
  const std::string ovl = "lowerdir=" + base + "/plain,upperdir=" + base + "/scratch/upper,workdir=" + base +
                          "/scratch/work,userxattr";
  if (::mount("overlay", (base + "/ovl").c_str(), "overlay", safe, ovl.c_str()) != 0) {
    std::perror("overlay");
    return 94;
  }

  if (!refused(base + "/plain", "ro", "not a mount of its own")) return 1;  // the engine bound nothing
  if (!refused(base + "/plain", "overlay", "not a mount of its own")) return 2;
  if (!refused(base + "/exec", "ro", "not mounted read-only, nosuid, nodev and noexec")) return 3;
  if (!refused(base + "/exec", "overlay", "nosuid, nodev and noexec")) return 4;
  if (!refused(base + "/rw", "ro", "read-only")) return 5;  // writable where ro was asked
  if (!refused(base + "/rw", "overlay", "not a writable overlay")) return 6;  // a tmpfs, not the overlay
  if (!refused(base + "/ro", "overlay", "not a writable overlay")) return 7;
  if (!refused(base + "/ovl", "ro", "read-only")) return 8;
  if (!refused("/proc/sys", "ro", "under /proc")) return 9;
  if (!refused("/", "ro", "mount point must be")) return 10;
  if (!refused(base + "/ro", "rw", "unknown mode")) return 11;
  if (!passes(base + "/ro", "ro")) return 20;
  if (!passes(base + "/ovl", "overlay")) return 21;
  return 0;
}

TEST(HostViewCheck, OnlyTheDaemonsViewShapesPass) {
  std::string base = "/tmp/lsb-hostview-XXXXXX";
  ASSERT_NE(::mkdtemp(base.data()), nullptr);
  ::chmod(base.c_str(), 0755);
  for (const char* d : {"plain", "exec", "rw", "ro", "scratch", "ovl"}) ::mkdir((base + "/" + d).c_str(), 0777);
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::getuid() == 0 && (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
                            ::setresuid(65534, 65534, 65534) != 0))
      ::_exit(80);
    ::prctl(PR_SET_DUMPABLE, 1);  // a change of ids made /proc/self root's: the maps below need it ours
    uid_t uid = ::getuid();
    gid_t gid = ::getgid();
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) ::_exit(81);
    {
      std::ofstream("/proc/self/setgroups") << "deny";
      std::ofstream("/proc/self/uid_map") << "0 " << uid << " 1";
      std::ofstream("/proc/self/gid_map") << "0 " << gid << " 1";
    }
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) ::_exit(82);
    ::_exit(Cases(base));
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  for (const char* d : {"plain", "exec", "rw", "ro", "scratch", "ovl"}) ::rmdir((base + "/" + d).c_str());
  ::rmdir(base.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 81) GTEST_SKIP() << "no unprivileged user namespaces here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the case that failed (stderr has the messages)";
}

}  // namespace
}  // namespace lsb::init
