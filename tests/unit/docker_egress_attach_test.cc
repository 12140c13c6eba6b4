// docker::ListenInNetworkOf (runtime/docker/egress_attach.h): the egress proxy's socket is made in
// the namespace of the given process, never in this process's own; a real child in a new network
// namespace stands in for a container's init (root only).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "protocol/messages.h"
#include "runtime/docker/egress_attach.h"

namespace lsb::docker {
namespace {

TEST(DockerEgressAttach, RefusesThisProcesssOwnNamespaceAndNonInitPids) {
  auto own = ListenInNetworkOf(::getpid());
  ASSERT_FALSE(own.ok());
  EXPECT_NE(own.error().message.find("shares this process's network namespace"), std::string::npos)
      << own.error().message;
  EXPECT_FALSE(ListenInNetworkOf(1).ok());
  EXPECT_FALSE(ListenInNetworkOf(0).ok());
  auto gone = ListenInNetworkOf(0x3ffffff);  // above pid_max: no such process
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.error().message.find("/proc/"), std::string::npos) << gone.error().message;
}

TEST(DockerEgressAttach, TheSocketIsInTheChildsNamespaceWithItsLoopbackUp) {
  if (::geteuid() != 0) GTEST_SKIP() << "a new network namespace needs root";
  int ready[2], go[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(go), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // A fresh namespace: loopback down, nothing listening. Then connect to the proxy's address.
    char c = ::unshare(CLONE_NEWNET) == 0 ? 'u' : 'e';
    (void)::write(ready[1], &c, 1);
    if (::read(go[0], &c, 1) != 1) ::_exit(3);
    int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(protocol::kEgressProxyPort);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) ::_exit(4);
    (void)::write(s, "x", 1);
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'u');
  auto listener = ListenInNetworkOf(child);
  ASSERT_TRUE(listener.ok()) << listener.error().message;
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  int conn = ::accept(listener->get(), nullptr, nullptr);
  ASSERT_GE(conn, 0);
  char got = 0;
  EXPECT_EQ(::read(conn, &got, 1), 1);
  EXPECT_EQ(got, 'x');
  ::close(conn);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  for (int fd : {ready[0], ready[1], go[0], go[1]}) ::close(fd);
}

}  // namespace
}  // namespace lsb::docker
