#include "init/exec_policy.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <set>
#include <cstring>

namespace lsb::init {
namespace {

TEST(JoinPath, NormalizesLexically) {
  EXPECT_EQ(JoinPath("/tmp/a", "../b"), "/tmp/b");
  EXPECT_EQ(JoinPath("/tmp", "/bin//sh"), "/bin/sh");
  EXPECT_EQ(JoinPath("/", "./x/./y/"), "/x/y");
  EXPECT_EQ(JoinPath("/a", "../../.."), "/");
}

// Real files in a temp dir: the policy judges identities (device, inode), not names.
class ExecPolicyFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lsb-exec-policy-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    for (const char* f : {"python", "dash", "ld.so", "bash", "other"}) {
      int fd = ::open((dir_ + "/" + f).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0755);
      ASSERT_GE(fd, 0);
      ASSERT_EQ(::write(fd, f, std::strlen(f)), static_cast<ssize_t>(std::strlen(f)));  // distinct files
      ::close(fd);
    }
    ASSERT_EQ(::link((dir_ + "/ld.so").c_str(), (dir_ + "/ld-hardlink").c_str()), 0);
    ASSERT_EQ(::symlink((dir_ + "/ld.so").c_str(), (dir_ + "/ld-symlink").c_str()), 0);
  }
  void TearDown() override {
    for (const char* f : {"python", "dash", "ld.so", "bash", "other", "ld-hardlink", "ld-symlink"})
      ::unlink((dir_ + "/" + f).c_str());
    ::rmdir(dir_.c_str());
  }
  FileId Id(const std::string& name) const {
    struct stat st{};
    EXPECT_EQ(::stat((dir_ + "/" + name).c_str(), &st), 0) << name;
    return FileId::Of(st);
  }
  ExecPolicy Policy() const {
    return ExecPolicy({dir_ + "/python"}, {dir_ + "/dash"}, {"/bin/sh"}, {dir_ + "/ld.so"}, {dir_ + "/bash"});
  }
  std::string dir_;
};

TEST_F(ExecPolicyFiles, DecidesByIdentityWhateverTheName) {
  ExecPolicy p = Policy();
  EXPECT_TRUE(p.Decide("/usr/bin/python3", Id("python")).allow);
  auto sh = p.Decide("/bin/sh", Id("dash"));
  EXPECT_FALSE(sh.allow);
  EXPECT_TRUE(sh.listed_in_deny);
  auto via_other_name = p.Decide("/usr/bin/sh", Id("dash"));
  EXPECT_FALSE(via_other_name.allow);
  EXPECT_TRUE(via_other_name.listed_in_deny);
  auto denied_by_name = p.Decide("/bin/sh", Id("other"));  // a deny entry as written wins too
  EXPECT_FALSE(denied_by_name.allow);
  EXPECT_TRUE(denied_by_name.listed_in_deny);
  EXPECT_EQ(p.Decide("/x", Id("other")).reason, "not in commands.allow");
}

TEST_F(ExecPolicyFiles, TheElfInterpreterIsRefusedUnderEveryName) {
  ExecPolicy p = Policy();
  for (const char* name : {"ld.so", "ld-hardlink", "ld-symlink"}) {
    auto d = p.Decide("/proc/self/root/lib64/" + std::string(name), Id(name));
    EXPECT_FALSE(d.allow) << name;
    EXPECT_FALSE(d.listed_in_deny);
    EXPECT_NE(d.reason.find("ELF interpreter"), std::string::npos) << d.reason;
    EXPECT_TRUE(p.IsElfInterpreter(Id(name)));
  }
  EXPECT_FALSE(p.IsElfInterpreter(Id("python")));
  EXPECT_FALSE(p.IsElfInterpreter(Id("bash")));
  auto bash = p.Decide("/bin/bash", Id("bash"));
  EXPECT_FALSE(bash.allow);
  EXPECT_NE(bash.reason.find("#!"), std::string::npos) << bash.reason;
}

TEST_F(ExecPolicyFiles, AnInterpreterThatIsAlsoAllowedIsACommand) {
  ExecPolicy p({dir_ + "/python"}, {}, {}, {dir_ + "/python"}, {dir_ + "/python"});
  EXPECT_TRUE(p.Decide("/usr/bin/python3", Id("python")).allow);
  EXPECT_FALSE(p.IsElfInterpreter(Id("python")));
}

TEST_F(ExecPolicyFiles, AbsentPathsAreRefusedOnlyWhenDenyNamesThem) {
  ExecPolicy p = Policy();
  EXPECT_TRUE(p.DecideAbsent("/nonexistent").allow);  // answered ENOENT, as the kernel would
  auto sh = p.DecideAbsent("/bin/sh");
  EXPECT_FALSE(sh.allow);
  EXPECT_TRUE(sh.listed_in_deny);
}

TEST(ExecPolicy, ResolvesSymlinksAndInterpretersOnThisHost) {
  std::vector<std::string> warnings;
  auto p = ExecPolicy::Resolve({"/usr/bin/python3", "/does/not/exist"}, {"/bin/sh"},
                               [&](const std::string& w) { warnings.push_back(w); });
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p->allowed().size(), 1u);
  EXPECT_EQ(p->allowed().begin()->rfind("/usr/bin/python3", 0), 0u);
  EXPECT_FALSE(p->support().empty());  // ld-linux
  struct stat ld{};
  ASSERT_EQ(::stat(p->support().begin()->c_str(), &ld), 0);
  EXPECT_TRUE(p->IsElfInterpreter(FileId::Of(ld)));
  struct stat lib64_ld{};
  if (::stat("/lib64/ld-linux-x86-64.so.2", &lib64_ld) == 0) {
    EXPECT_TRUE(p->IsElfInterpreter(FileId::Of(lib64_ld)));  // the same file by its PT_INTERP name
  }
  EXPECT_EQ(warnings.size(), 1u);
  EXPECT_FALSE(ExecPolicy::Resolve({"relative"}, {}, [](const std::string&) {}).ok());
}

TEST(ExecPolicy, DenyWinsOverAllow) {
  auto p = ExecPolicy::Resolve({"/bin/sh"}, {"/bin/sh"}, [](const std::string&) {});
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->allowed().empty());
}

// Presets write /usr/bin/NAME and /bin/NAME: on a merged-/usr root (this host) both are one file,
// allowed once under its real name, as realpath() names it.
TEST(ExecPolicy, BothNamesOfAPresetCommandAreOneFile) {
  std::vector<std::string> warnings;
  auto p = ExecPolicy::Resolve({"/usr/bin/ls", "/bin/ls", "/usr/bin/python3", "/bin/python3", "/bin/no-such-cmd"}, {},
                               [&](const std::string& w) { warnings.push_back(w); });
  ASSERT_TRUE(p.ok()) << p.error().message;
  char ls[PATH_MAX], py[PATH_MAX];
  ASSERT_NE(::realpath("/bin/ls", ls), nullptr);
  ASSERT_NE(::realpath("/usr/bin/python3", py), nullptr);  // a symlink (python3 -> python3.11)
  EXPECT_EQ(p->allowed(), (std::set<std::string>{ls, py}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("/bin/no-such-cmd does not exist"), std::string::npos) << warnings[0];
}

// /bin/ls -> busybox (Alpine-style roots): allowing "ls" (by hand or through @coreutils) must not
// allow every applet, `busybox sh` included. Naming the binary itself still allows it.
TEST(ExecPolicy, MultiCallShellBinaryUnderAnotherNameIsSkipped) {
  char tmpl[] = "/tmp/lsb-busybox-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  int fd = ::open((dir + "/busybox").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0755);
  ASSERT_GE(fd, 0);
  const char script[] = "#!/bin/true\n";  // a start the resolver can follow (its "#!" exists)
  ASSERT_EQ(::write(fd, script, sizeof script - 1), static_cast<ssize_t>(sizeof script - 1));
  ::close(fd);
  ASSERT_EQ(::symlink((dir + "/busybox").c_str(), (dir + "/ls").c_str()), 0);
  std::vector<std::string> warnings;
  auto via_ls = ExecPolicy::Resolve({dir + "/ls"}, {}, [&](const std::string& w) { warnings.push_back(w); });
  auto itself = ExecPolicy::Resolve({dir + "/busybox"}, {}, [](const std::string&) {});
  ::unlink((dir + "/ls").c_str());
  ::unlink((dir + "/busybox").c_str());
  ::rmdir(dir.c_str());
  ASSERT_TRUE(via_ls.ok()) << via_ls.error().message;
  EXPECT_TRUE(via_ls->allowed().empty());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("multi-call binary with a shell; skipped"), std::string::npos) << warnings[0];
  ASSERT_TRUE(itself.ok()) << itself.error().message;
  EXPECT_EQ(itself->allowed().size(), 1u);
}

}  // namespace
}  // namespace lsb::init
