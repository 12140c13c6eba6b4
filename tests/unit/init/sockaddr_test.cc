#include "init/sockaddr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstddef>
#include <cstring>

#include <gtest/gtest.h>

#include "init/notify_watch.h"

namespace lsb::init {
namespace {

template <typename T>
std::string Bytes(const T& v, size_t len = sizeof(T)) {
  return std::string(reinterpret_cast<const char*>(&v), len);
}

TEST(DescribeSockaddr, Inet) {
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(6379);
  inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
  auto i = DescribeSockaddr(Bytes(sin));
  EXPECT_EQ(i.family, AF_INET);
  EXPECT_TRUE(i.inet);
  EXPECT_EQ(i.text, "127.0.0.1:6379");
}

TEST(DescribeSockaddr, Inet6IncludingTheShortRfc2133Form) {
  sockaddr_in6 s6{};
  s6.sin6_family = AF_INET6;
  s6.sin6_port = htons(80);
  inet_pton(AF_INET6, "::1", &s6.sin6_addr);
  EXPECT_EQ(DescribeSockaddr(Bytes(s6)).text, "[::1]:80");
  EXPECT_EQ(DescribeSockaddr(Bytes(s6, 24)).text, "[::1]:80");
  EXPECT_TRUE(DescribeSockaddr(Bytes(s6, 10)).inet);  // truncated, still inet: refused when off
}

TEST(DescribeSockaddr, UnixPathAbstractAndUnnamed) {
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  std::strcpy(un.sun_path, "/run/x.sock");
  auto i = DescribeSockaddr(Bytes(un, offsetof(sockaddr_un, sun_path) + 12));
  EXPECT_FALSE(i.inet);
  EXPECT_EQ(i.text, "unix:/run/x.sock");
  sockaddr_un ab{};
  ab.sun_family = AF_UNIX;
  std::memcpy(ab.sun_path, "\0name", 5);
  EXPECT_EQ(DescribeSockaddr(Bytes(ab, offsetof(sockaddr_un, sun_path) + 5)).text, "unix:@name");
  EXPECT_EQ(DescribeSockaddr(Bytes(ab, sizeof(sa_family_t))).text, "unix:(unnamed)");
}

TEST(DescribeSockaddr, EmptyAndTinyInputs) {
  EXPECT_EQ(DescribeSockaddr("").family, -1);
  EXPECT_EQ(DescribeSockaddr("x").family, -1);
}

TEST(DecideNetwork, OffRefusesInetConnectAndSendButNotBindOrUnix) {
  EXPECT_EQ(DecideNetwork("connect", true, false), ENETUNREACH);
  EXPECT_EQ(DecideNetwork("sendto", true, false), ENETUNREACH);
  EXPECT_EQ(DecideNetwork("sendmsg", true, false), ENETUNREACH);
  EXPECT_EQ(DecideNetwork("bind", true, false), 0);
  EXPECT_EQ(DecideNetwork("connect", false, false), 0);
  EXPECT_EQ(DecideNetwork("connect", true, true), 0);
}

// The network on through the egress proxy: the proxy's address is the one inet destination.
TEST(DecideDestination, WithTheEgressProxyOnlyItIsReachable) {
  WatchConfig cfg;
  cfg.network_enabled = true;
  cfg.egress_proxy = "127.0.0.1:3128";
  EXPECT_EQ(DecideDestination("connect", true, "127.0.0.1:3128", cfg), 0);
  EXPECT_EQ(DecideDestination("connect", true, "127.0.0.1:3129", cfg), ENETUNREACH);
  EXPECT_EQ(DecideDestination("connect", true, "[::1]:3128", cfg), ENETUNREACH);
  EXPECT_EQ(DecideDestination("sendto", true, "8.8.8.8:53", cfg), ENETUNREACH);
  EXPECT_EQ(DecideDestination("bind", true, "0.0.0.0:8000", cfg), 0);
  EXPECT_EQ(DecideDestination("connect", false, "unix:/x", cfg), 0);
  cfg.egress_proxy.clear();  // the network on without the proxy (Docker's bridge): every destination
  EXPECT_EQ(DecideDestination("connect", true, "8.8.8.8:53", cfg), 0);
  cfg.network_enabled = false;
  EXPECT_EQ(DecideDestination("connect", true, "8.8.8.8:53", cfg), ENETUNREACH);
}

}  // namespace
}  // namespace lsb::init
