// The egress proxy's parts (src/egress/): the TLS ClientHello's SNI, the request head, the
// verdicts on names and addresses, and the proxy itself over real sockets on 127.0.0.1.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>

#include "egress/egress_proxy.h"
#include "egress/egress_rules.h"
#include "egress/http_head.h"
#include "egress/tls_client_hello.h"

namespace lsb::egress {
namespace {

// A minimal TLS 1.2-style ClientHello record, with `sni` as its server_name when not empty.
std::string ClientHello(const std::string& sni) {
  std::string ext;
  if (!sni.empty()) {
    std::string entry = std::string("\x00", 1) + char(sni.size() >> 8) + char(sni.size() & 0xff) + sni;
    std::string list = std::string(1, char(entry.size() >> 8)) + char(entry.size() & 0xff) + entry;
    ext = std::string("\x00\x00", 2) + char(list.size() >> 8) + char(list.size() & 0xff) + list;
  }
  std::string body = std::string("\x03\x03", 2) + std::string(32, 'r') + std::string("\x00", 1) +  // no session id
                     std::string("\x00\x02\x13\x01", 4) + std::string("\x01\x00", 2) +            // one suite, null compression
                     char(ext.size() >> 8) + char(ext.size() & 0xff) + ext;
  std::string hs = std::string("\x01", 1) + char(0) + char(body.size() >> 8) + char(body.size() & 0xff) + body;
  return std::string("\x16\x03\x01", 3) + char(hs.size() >> 8) + char(hs.size() & 0xff) + hs;
}

TEST(EgressTls, ReadsTheServerName) {
  auto r = ParseClientHelloSni(ClientHello("Allowed.Test"));
  ASSERT_EQ(r.status, ClientHelloSni::Status::kOk);
  ASSERT_TRUE(r.sni);
  EXPECT_EQ(*r.sni, "allowed.test");
  auto none = ParseClientHelloSni(ClientHello(""));
  ASSERT_EQ(none.status, ClientHelloSni::Status::kOk);
  EXPECT_FALSE(none.sni);
}

TEST(EgressTls, PartialNotTlsAndMalformed) {
  std::string hello = ClientHello("allowed.test");
  auto part = ParseClientHelloSni(hello.substr(0, 20));
  EXPECT_EQ(part.status, ClientHelloSni::Status::kNeedMore);
  EXPECT_EQ(part.record_bytes, hello.size());
  EXPECT_EQ(ParseClientHelloSni("GET / HTTP/1.1\r\n").status, ClientHelloSni::Status::kNotTls);
  std::string broken = hello;
  broken[7] = '\x7f';  // handshake length (bytes 6-8) past the record
  EXPECT_EQ(ParseClientHelloSni(broken).status, ClientHelloSni::Status::kMalformed);
}

TEST(EgressHttp, ParsesAbsoluteAndConnectTargets) {
  auto t = ParseAbsoluteTarget("http://Allowed.Test:8080/simple/x?token=secret");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->host, "allowed.test");
  EXPECT_EQ(t->port, 8080);
  EXPECT_EQ(t->path, "/simple/x?token=secret");
  EXPECT_EQ(PathForEvents(t->path), "/simple/x");
  EXPECT_FALSE(ParseAbsoluteTarget("/relative").ok());
  EXPECT_FALSE(ParseAbsoluteTarget("https://a.test/").ok());
  EXPECT_FALSE(ParseAbsoluteTarget("http://user@a.test/").ok());
  auto c = ParseConnectTarget("[::1]:443");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->host, "::1");
  EXPECT_FALSE(ParseConnectTarget("a.test").ok());
}

TEST(EgressHttp, UpstreamHeadPinsHostAndDropsProxyHeaders) {
  auto head = ParseRequestHead(
      "GET http://allowed.test/p HTTP/1.1\r\nHost: evil.test\r\nProxy-Authorization: x\r\nAccept: */*\r\n\r\n");
  ASSERT_TRUE(head.ok());
  auto t = ParseAbsoluteTarget(head->target);
  std::string up = UpstreamHead(*head, *t);
  EXPECT_EQ(up, "GET /p HTTP/1.1\r\nHost: allowed.test\r\nAccept: */*\r\nConnection: close\r\n\r\n");
  EXPECT_FALSE(ParseRequestHead("GET http://a/ HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n").ok());
  EXPECT_FALSE(ParseRequestHead("GET http://a/ HTTP/1.1\r\n folded\r\n\r\n").ok());
}

TEST(EgressRules, DenyWinsAndEmptyAllowIsNothing) {
  auto rules = EgressRules::Parse({"*.github.com", "pypi.org:443"}, {"gist.github.com"});
  ASSERT_TRUE(rules.ok());
  EXPECT_TRUE(rules->CheckTarget("api.github.com", 443).allowed);
  EXPECT_FALSE(rules->CheckTarget("gist.github.com", 443).allowed);
  EXPECT_FALSE(rules->CheckTarget("github.com", 443).allowed);
  EXPECT_FALSE(rules->CheckTarget("pypi.org", 80).allowed);
  EXPECT_FALSE(rules->CheckTarget("140.82.112.3", 443).allowed);  // an address needs an address entry
  auto none = EgressRules::Parse({}, {});
  EXPECT_FALSE(none->CheckTarget("pypi.org", 443).allowed);
}

TEST(EgressRules, SpecialAddressesOnlyWhenNamedByAddress) {
  auto ip = [](const char* s) { return *ParseIpLiteral(s); };
  for (const char* special : {"127.0.0.1", "169.254.169.254", "10.1.2.3", "172.16.0.1", "192.168.1.1", "0.0.0.0",
                              "224.0.0.1", "::1", "fe80::1", "fd00::1", "::", "::ffff:127.0.0.1", "100.64.0.1"}) {
    EXPECT_FALSE(SpecialRange(ip(special), {}).empty()) << special;
  }
  EXPECT_TRUE(SpecialRange(ip("93.184.216.34"), {}).empty());
  EXPECT_EQ(SpecialRange(ip("93.184.216.34"), {ip("93.184.216.34")}), "this host's own address");
  auto rules = EgressRules::Parse({"*", "127.0.0.1:8080"}, {"203.0.113.0/24"});
  std::vector<IpAddress> own;
  EXPECT_FALSE(rules->CheckAddress(ip("169.254.169.254"), 80, own).allowed);
  EXPECT_FALSE(rules->CheckAddress(ip("127.0.0.1"), 9000, own).allowed);
  EXPECT_TRUE(rules->CheckAddress(ip("127.0.0.1"), 8080, own).allowed);
  EXPECT_TRUE(rules->CheckAddress(ip("8.8.8.8"), 53, own).allowed);
  EXPECT_FALSE(rules->CheckAddress(ip("203.0.113.5"), 80, own).allowed);
}

TEST(EgressOptions, ResolvePins) {
  auto pin = ParseResolvePin("Allowed.Test:127.0.0.1");
  ASSERT_TRUE(pin.ok());
  EXPECT_EQ(pin->first, "allowed.test");
  EXPECT_FALSE(ParseResolvePin("allowed.test").ok());
  EXPECT_FALSE(ParseResolvePin("allowed.test:nope").ok());
  EgressOptions o;
  ASSERT_TRUE(*ApplyEgressFlag("--egress-resolve", "a.test:[::1]", o));
  EXPECT_EQ(o.pins["a.test"].size(), 1u);
  EXPECT_FALSE(ApplyEgressFlag("--egress-max-connections", "0", o).ok());
  EXPECT_FALSE(*ApplyEgressFlag("--other", "1", o));
}

// --- the proxy over real sockets -----------------------------------------------------------

UniqueFd Listen(uint16_t* port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::listen(fd.get(), 16), 0);
  socklen_t len = sizeof a;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

UniqueFd Dial(uint16_t port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

// An upstream that answers every connection with "hello" and records the request head it saw.
struct Upstream {
  uint16_t port = 0;
  UniqueFd fd = Listen(&port);
  std::string seen;
  std::thread t;
  void Serve(int connections) {
    t = std::thread([this, connections] {
      for (int i = 0; i < connections; ++i) {
        UniqueFd c(::accept(fd.get(), nullptr, nullptr));
        char buf[4096];
        ssize_t n = ::read(c.get(), buf, sizeof buf);
        if (n > 0) seen.append(buf, static_cast<size_t>(n));
        const char* answer = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";
        (void)!::send(c.get(), answer, std::strlen(answer), MSG_NOSIGNAL);
      }
    });
  }
  ~Upstream() {
    if (t.joinable()) t.join();
  }
};

struct ProxyUnderTest {
  uint16_t port = 0;
  std::unique_ptr<EgressProxy> proxy;
  ProxyUnderTest(std::vector<std::string> allow, std::vector<std::string> deny, EgressOptions opts) {
    UniqueFd listener = Listen(&port);
    auto rules = EgressRules::Parse(allow, deny);
    auto made = EgressProxy::Create(std::move(listener), std::move(*rules), std::move(opts));
    EXPECT_TRUE(made.ok());
    proxy = std::move(*made);
    proxy->BeginRun();
  }
  std::string Request(const std::string& head) {
    UniqueFd c = Dial(port);
    (void)!::write(c.get(), head.data(), head.size());
    return ReadAll(c.get());
  }
};

EgressOptions Pinned(const std::string& name, const char* addr) {
  EgressOptions o;
  o.pins[name] = {*ParseIpLiteral(addr)};
  return o;
}

TEST(EgressProxy, ForwardsAnAllowedNameToThePinnedAddressWithItsHost) {
  Upstream up;
  up.Serve(1);
  ProxyUnderTest p({"allowed.test", "127.0.0.1:" + std::to_string(up.port)}, {}, Pinned("allowed.test", "127.0.0.1"));
  std::string answer = p.Request("GET http://allowed.test:" + std::to_string(up.port) +
                                 "/x?q=1 HTTP/1.1\r\nHost: evil.test\r\n\r\n");
  EXPECT_NE(answer.find("hello"), std::string::npos) << answer;
  up.t.join();
  EXPECT_EQ(up.seen.rfind("GET /x?q=1 HTTP/1.1\r\nHost: allowed.test:" + std::to_string(up.port) + "\r\n", 0), 0u) << up.seen;
  auto events = p.proxy->TakeEvents(std::chrono::milliseconds(1000));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].decision, "allowed");
  EXPECT_EQ(events[0].egress.host, "allowed.test");
  EXPECT_EQ(events[0].egress.method, "GET");
  EXPECT_EQ(events[0].egress.path, "/x");
  EXPECT_GT(events[0].egress.bytes_down, 5u);
  EXPECT_EQ(events[0].rule, protocol::AlertRule::kNone);
}

TEST(EgressProxy, RefusesALoopbackAddressBehindAnAllowedName) {
  Upstream up;  // never reached
  ProxyUnderTest p({"allowed.test"}, {}, Pinned("allowed.test", "127.0.0.1"));
  std::string answer = p.Request("GET http://allowed.test:" + std::to_string(up.port) + "/ HTTP/1.1\r\n\r\n");
  EXPECT_EQ(answer.rfind("HTTP/1.1 403", 0), 0u) << answer;
  EXPECT_NE(answer.find("loopback"), std::string::npos) << answer;
  auto events = p.proxy->TakeEvents(std::chrono::milliseconds(1000));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].rule, protocol::AlertRule::kNetworkDenied);
  EXPECT_EQ(events[0].egress.resolved, "");
}

TEST(EgressProxy, RefusesUnlistedAndDeniedNames) {
  ProxyUnderTest p({"*.test"}, {"denied.test"}, {});
  EXPECT_EQ(p.Request("GET http://denied.test/ HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 403", 0), 0u);
  EXPECT_EQ(p.Request("CONNECT other.example:443 HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 403", 0), 0u);
  auto events = p.proxy->TakeEvents(std::chrono::milliseconds(1000));
  ASSERT_EQ(events.size(), 2u);
  for (const auto& e : events) EXPECT_EQ(e.rule, protocol::AlertRule::kNetworkDenied) << e.message;
}

TEST(EgressProxy, ConnectChecksTheSniAgainstTheTarget) {
  Upstream up;
  up.Serve(1);
  const std::string port = std::to_string(up.port);
  ProxyUnderTest p({"allowed.test", "127.0.0.1:" + port}, {}, Pinned("allowed.test", "127.0.0.1"));
  for (const std::string& sni : {std::string("denied.test"), std::string("")}) {
    UniqueFd c = Dial(p.port);
    std::string req = "CONNECT allowed.test:" + port + " HTTP/1.1\r\n\r\n" + ClientHello(sni);
    (void)!::write(c.get(), req.data(), req.size());
    std::string got = ReadAll(c.get());
    EXPECT_EQ(got, "HTTP/1.1 200 Connection Established\r\n\r\n");  // then closed: nothing reached upstream
  }
  UniqueFd ok = Dial(p.port);
  std::string req = "CONNECT allowed.test:" + port + " HTTP/1.1\r\n\r\n" + ClientHello("allowed.test");
  (void)!::write(ok.get(), req.data(), req.size());
  std::string got = ReadAll(ok.get());
  EXPECT_NE(got.find("hello"), std::string::npos) << got;
  up.t.join();
  EXPECT_EQ(up.seen, ClientHello("allowed.test"));
  auto events = p.proxy->TakeEvents(std::chrono::milliseconds(1000));
  ASSERT_EQ(events.size(), 3u);
  int denied = 0;
  for (const auto& e : events) denied += e.rule == protocol::AlertRule::kNetworkDenied;
  EXPECT_EQ(denied, 2);
}

TEST(EgressProxy, ConnectionLimitAndByteLimitHold) {
  EgressOptions o = Pinned("allowed.test", "127.0.0.1");
  o.max_connections = 1;
  ProxyUnderTest p({"allowed.test"}, {}, o);
  UniqueFd held = Dial(p.port);  // half a head: holds the one slot until its head times out
  (void)!::write(held.get(), "GET http://allowed.test/ HTTP/1.1\r\n", 35);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(p.Request("GET http://allowed.test/ HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 503", 0), 0u);
  held.reset();
  auto events = p.proxy->TakeEvents(std::chrono::milliseconds(1000));
  bool limit = false;
  for (const auto& e : events) limit |= e.message.find("the limit per box") != std::string::npos;
  EXPECT_TRUE(limit);

  Upstream big;
  const std::string port = std::to_string(big.port);
  EgressOptions b = Pinned("allowed.test", "127.0.0.1");
  b.max_bytes_per_run = 1000;
  ProxyUnderTest q({"allowed.test", "127.0.0.1:" + port}, {}, b);
  std::thread server([&] {
    UniqueFd c(::accept(big.fd.get(), nullptr, nullptr));
    char buf[4096];
    (void)!::read(c.get(), buf, sizeof buf);
    std::string body(100000, 'x');
    (void)!::send(c.get(), body.data(), body.size(), MSG_NOSIGNAL);
  });
  std::string got = q.Request("GET http://allowed.test:" + port + "/ HTTP/1.1\r\n\r\n");
  server.join();
  EXPECT_LT(got.size(), 70000u);
  auto cut = q.proxy->TakeEvents(std::chrono::milliseconds(1000));
  ASSERT_EQ(cut.size(), 1u);
  EXPECT_EQ(cut[0].rule, protocol::AlertRule::kNetworkDenied);
  EXPECT_NE(cut[0].message.find("byte limit"), std::string::npos) << cut[0].message;
}

// Boxes whose proxies share one EgressOptions (a daemon's) share --egress-max-connections-total:
// a connection held open on one box's proxy takes the only slot from the other box.
TEST(EgressProxy, TheBoundAcrossBoxesHolds) {
  EgressOptions o = Pinned("allowed.test", "127.0.0.1");
  o.max_connections_total = 1;
  ProxyUnderTest a({"allowed.test"}, {}, o), b({"allowed.test"}, {}, o);
  UniqueFd held = Dial(a.port);  // half a head: holds the one slot
  (void)!::write(held.get(), "GET http://allowed.test/ HTTP/1.1\r\n", 35);
  for (int i = 0; i < 100 && o.slots->taken() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(o.slots->taken(), 1u);
  std::string refused = b.Request("GET http://denied.test/ HTTP/1.1\r\n\r\n");
  EXPECT_EQ(refused.rfind("HTTP/1.1 503", 0), 0u) << refused;
  auto events = b.proxy->TakeEvents(std::chrono::milliseconds(1000));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].rule, protocol::AlertRule::kNetworkDenied);
  EXPECT_NE(events[0].message.find("--egress-max-connections-total"), std::string::npos) << events[0].message;
  held.reset();  // the slot comes back: the other box is served again
  for (int i = 0; i < 200 && o.slots->taken() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(b.Request("GET http://denied.test/ HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 403", 0), 0u);
  (void)a.proxy->TakeEvents(std::chrono::milliseconds(1000));
  (void)b.proxy->TakeEvents(std::chrono::milliseconds(1000));
  EXPECT_EQ(o.slots->taken(), 0u);
}

// A large body both ways through a plain tunnel (the splice path): every byte arrives, in order,
// and the event counts exactly what passed.
TEST(EgressProxy, RelaysALargeStreamExactlyAndCountsItsBytes) {
  Upstream up;
  const std::string port = std::to_string(up.port);
  ProxyUnderTest p({"allowed.test", "127.0.0.1:" + port}, {}, Pinned("allowed.test", "127.0.0.1"));
  const size_t kBody = 5u << 20;
  std::string body(kBody, '\0');
  for (size_t i = 0; i < kBody; ++i) body[i] = static_cast<char>((i * 131 + i / 7) & 0xff);
  std::string echoed_head;
  std::thread server([&] {
    UniqueFd c(::accept(up.fd.get(), nullptr, nullptr));
    std::string got;
    char buf[65536];
    ssize_t n;
    while (got.find("\r\n\r\n") == std::string::npos || got.size() < got.find("\r\n\r\n") + 4 + kBody) {
      n = ::read(c.get(), buf, sizeof buf);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
    size_t at = got.find("\r\n\r\n") + 4;
    echoed_head = got.substr(0, at);
    std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(kBody) + "\r\n\r\n" + got.substr(at);
    (void)!::send(c.get(), answer.data(), answer.size(), MSG_NOSIGNAL);
  });
  std::string req = "POST http://allowed.test:" + port + "/up HTTP/1.1\r\nContent-Length: " + std::to_string(kBody) +
                    "\r\n\r\n";
  UniqueFd c = Dial(p.port);
  std::thread writer([&] {
    std::string all = req + body;
    size_t off = 0;
    while (off < all.size()) {
      ssize_t n = ::send(c.get(), all.data() + off, all.size() - off, MSG_NOSIGNAL);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
  });
  std::string got = ReadAll(c.get());
  writer.join();
  server.join();
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(kBody) + "\r\n\r\n";
  ASSERT_EQ(got.size(), head.size() + kBody);
  EXPECT_TRUE(got.compare(head.size(), kBody, body) == 0);
  auto events = p.proxy->TakeEvents(std::chrono::milliseconds(1000));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].decision, "allowed") << events[0].message;
  EXPECT_EQ(events[0].egress.bytes_down, got.size());
  EXPECT_EQ(events[0].egress.bytes_up, echoed_head.size() + kBody);
}

}  // namespace
}  // namespace lsb::egress
