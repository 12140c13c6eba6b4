#include "base/fd_passing.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <gtest/gtest.h>

#include "base/unique_fd.h"

namespace lsb {
namespace {

struct Pair {
  UniqueFd a, b;
};

Pair SocketPair() {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  return Pair{UniqueFd(sv[0]), UniqueFd(sv[1])};
}

ino_t Inode(int fd) {
  struct stat st {};
  EXPECT_EQ(::fstat(fd, &st), 0);
  return st.st_ino;
}

TEST(FdPassing, DescriptorsArriveWithTheirBytesCloseOnExec) {
  Pair p = SocketPair();
  UniqueFd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  UniqueFd self(::open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
  int send[2] = {null.get(), self.get()};
  ASSERT_EQ(SendWithFds(p.a.get(), "go", 2, send, 2), 2);
  char buf[8] = {};
  int got[kMaxPassedFds];
  size_t n = 0;
  ASSERT_EQ(RecvWithFds(p.b.get(), buf, sizeof buf, got, &n), 2);
  EXPECT_EQ(std::string(buf, 2), "go");
  ASSERT_EQ(n, 2u);
  UniqueFd g0(got[0]), g1(got[1]);
  EXPECT_EQ(Inode(g0.get()), Inode(null.get()));
  EXPECT_EQ(Inode(g1.get()), Inode(self.get()));
  EXPECT_TRUE(::fcntl(g0.get(), F_GETFD) & FD_CLOEXEC);
}

TEST(FdPassing, BytesWithoutDescriptorsAndEof) {
  Pair p = SocketPair();
  ASSERT_EQ(SendWithFds(p.a.get(), "x", 1, nullptr, 0), 1);
  p.a.reset();
  char c = 0;
  int got[kMaxPassedFds];
  size_t n = 7;
  EXPECT_EQ(RecvWithFds(p.b.get(), &c, 1, got, &n), 1);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(RecvWithFds(p.b.get(), &c, 1, got, &n), 0);  // EOF
}

TEST(FdPassing, TooManyDescriptorsIsAnErrorNotASilentLoss) {
  Pair p = SocketPair();
  int fds[kMaxPassedFds + 1];
  for (auto& fd : fds) fd = 0;
  errno = 0;
  EXPECT_EQ(SendWithFds(p.a.get(), "x", 1, fds, kMaxPassedFds + 1), -1);
  EXPECT_EQ(errno, EINVAL);
}

}  // namespace
}  // namespace lsb
