// ResolveAsCaller must land on the file the CALLER's kernel lookup reaches, not on what the same
// string names for init: a child process with its own cwd (deleted), its own descriptors and its
// own pid stands in for the program; this test process stands in for init.
#include "init/caller_path.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace lsb::init {
namespace {

class CallerPath : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lsb-caller-path-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_EQ(::mkdir((dir_ + "/a").c_str(), 0755), 0);
    ASSERT_EQ(::mkdir((dir_ + "/b").c_str(), 0755), 0);
    ASSERT_EQ(::mkdir((dir_ + "/a/gone").c_str(), 0755), 0);
    Touch(dir_ + "/a/file");
    Touch(dir_ + "/b/file2");
    ASSERT_EQ(::symlink("loop", (dir_ + "/loop").c_str()), 0);

    int ready[2], hold[2];
    ASSERT_EQ(::pipe(ready), 0);
    ASSERT_EQ(::pipe(hold), 0);
    child_ = ::fork();
    ASSERT_GE(child_, 0);
    if (child_ == 0) {
      // The caller: cwd a deleted directory under a/, and b/ open as a descriptor.
      ::close(ready[0]);
      ::close(hold[1]);
      int fd = ::open((dir_ + "/b").c_str(), O_PATH | O_DIRECTORY);
      if (fd < 0 || ::chdir((dir_ + "/a/gone").c_str()) != 0 || ::rmdir((dir_ + "/a/gone").c_str()) != 0) ::_exit(1);
      if (::write(ready[1], &fd, sizeof fd) != sizeof fd) ::_exit(1);
      char c;
      (void)::read(hold[0], &c, 1);  // until the parent is done
      ::_exit(0);
    }
    ::close(ready[1]);
    ::close(hold[0]);
    hold_ = hold[1];
    ASSERT_EQ(::read(ready[0], &child_fd_, sizeof child_fd_), static_cast<ssize_t>(sizeof child_fd_));
    ::close(ready[0]);
    // Links that only the caller's context makes right.
    ASSERT_EQ(::symlink(("/proc/self/fd/" + std::to_string(child_fd_) + "/file2").c_str(), (dir_ + "/via-fd").c_str()), 0);
    ASSERT_EQ(::symlink("/proc/thread-self/cwd/../file", (dir_ + "/via-cwd").c_str()), 0);
  }
  void TearDown() override {
    if (hold_ >= 0) ::close(hold_);
    if (child_ > 0) ::waitpid(child_, nullptr, 0);
    for (const char* f : {"/a/file", "/b/file2", "/loop", "/via-fd", "/via-cwd"}) ::unlink((dir_ + f).c_str());
    for (const char* d : {"/a", "/b", ""}) ::rmdir((dir_ + d).c_str());
  }
  static void Touch(const std::string& p) {
    int fd = ::open(p.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ::close(fd);
  }
  static std::pair<dev_t, ino_t> IdOfPath(const std::string& p) {
    struct stat st{};
    EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
    return {st.st_dev, st.st_ino};
  }
  std::pair<dev_t, ino_t> Resolve(int dirfd, const std::string& path) {
    auto r = ResolveAsCaller(child_, dirfd, path, true);
    EXPECT_TRUE(r.ok()) << path << ": " << (r.ok() ? "" : r.error().message);
    if (!r.ok()) return {};
    struct stat st{};
    EXPECT_EQ(::fstat(r->get(), &st), 0);
    return {st.st_dev, st.st_ino};
  }
  int ResolveErrno(const std::string& path) {
    auto r = ResolveAsCaller(child_, AT_FDCWD, path, true);
    return r.ok() ? 0 : r.error().sys_errno;
  }

  std::string dir_;
  pid_t child_ = -1;
  int hold_ = -1;
  int child_fd_ = -1;
};

TEST_F(CallerPath, RelativeNamesStartAtTheCallersDeletedCwd) {
  const auto file = IdOfPath(dir_ + "/a/file");
  EXPECT_EQ(Resolve(AT_FDCWD, "../file"), file);
  EXPECT_EQ(Resolve(AT_FDCWD, "./../../a/./file"), file);
  EXPECT_EQ(ResolveErrno("file"), ENOENT);  // a deleted directory has no entries
}

TEST_F(CallerPath, ProcSelfAndThreadSelfNameTheCaller) {
  const auto file = IdOfPath(dir_ + "/a/file");
  const auto file2 = IdOfPath(dir_ + "/b/file2");
  EXPECT_EQ(Resolve(AT_FDCWD, "/proc/self/cwd/../file"), file);
  EXPECT_EQ(Resolve(AT_FDCWD, "/proc/thread-self/cwd/../file"), file);
  EXPECT_EQ(Resolve(AT_FDCWD, "/proc/self/fd/" + std::to_string(child_fd_) + "/file2"), file2);
  EXPECT_EQ(Resolve(AT_FDCWD, "/proc/" + std::to_string(child_) + "/cwd/../file"), file);
  EXPECT_EQ(Resolve(AT_FDCWD, "/proc/self/root/proc/self/root" + dir_ + "/a/file"), file);
  EXPECT_EQ(ThreadGroupOf(child_), child_);
}

TEST_F(CallerPath, SymlinksThroughProcAreFollowedAsTheCaller) {
  EXPECT_EQ(Resolve(AT_FDCWD, dir_ + "/via-fd"), IdOfPath(dir_ + "/b/file2"));
  EXPECT_EQ(Resolve(AT_FDCWD, dir_ + "/via-cwd"), IdOfPath(dir_ + "/a/file"));
  auto nofollow = ResolveAsCaller(child_, AT_FDCWD, dir_ + "/via-fd", false);
  ASSERT_TRUE(nofollow.ok());
  struct stat st{};
  ASSERT_EQ(::fstat(nofollow->get(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}

TEST_F(CallerPath, DirfdIsTheCallersDescriptor) {
  EXPECT_EQ(Resolve(child_fd_, "file2"), IdOfPath(dir_ + "/b/file2"));
  EXPECT_EQ(Resolve(child_fd_, "../a/file"), IdOfPath(dir_ + "/a/file"));
  EXPECT_EQ(Resolve(child_fd_, "/proc/self/cwd/../file"), IdOfPath(dir_ + "/a/file"));  // absolute: dirfd unused
  auto bad = ResolveAsCaller(child_, 1000, "file2", true);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().sys_errno, ENOENT);  // no such descriptor in the caller
}

TEST_F(CallerPath, DotDotStopsAtTheRootAndLoopsEnd) {
  EXPECT_EQ(Resolve(AT_FDCWD, "/../../.." + dir_ + "/a/file"), IdOfPath(dir_ + "/a/file"));
  EXPECT_EQ(ResolveErrno(dir_ + "/loop"), ELOOP);
  EXPECT_EQ(ResolveErrno(dir_ + "/a/file/x"), ENOTDIR);
  EXPECT_EQ(ResolveErrno(""), ENOENT);
  EXPECT_EQ(ResolveErrno(std::string(5000, 'a')), ENAMETOOLONG);
}

TEST(CallerPathGone, AThreadThatIsGoneIsAnError) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  EXPECT_FALSE(ResolveAsCaller(pid, AT_FDCWD, "/etc/passwd", true).ok());
}

}  // namespace
}  // namespace lsb::init
