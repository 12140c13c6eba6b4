// The daemon's front door, pure parts: the connection table's admission and eviction rule (class 6
// of issue 15), the browser rules on Origin and Host, and the JSON routes' Content-Type (class 7).
#include <arpa/inet.h>
#include <netinet/in.h>

#include <chrono>

#include <gtest/gtest.h>

#include "server/connection_table.h"
#include "server/router.h"
#include "server/web_guard.h"

namespace lsb::server {
namespace {

using Clock = ConnectionTable::Clock;
using std::chrono::milliseconds;

sockaddr_storage V4(const char* ip) {
  sockaddr_storage s{};
  auto* a = reinterpret_cast<sockaddr_in*>(&s);
  a->sin_family = AF_INET;
  ::inet_pton(AF_INET, ip, &a->sin_addr);
  return s;
}

sockaddr_storage V6(const char* ip) {
  sockaddr_storage s{};
  auto* a = reinterpret_cast<sockaddr_in6*>(&s);
  a->sin6_family = AF_INET6;
  ::inet_pton(AF_INET6, ip, &a->sin6_addr);
  return s;
}

TEST(PeerKey, GroupsByAddressAndIpv6Prefix) {
  EXPECT_EQ(PeerKey(V4("127.0.0.7")), "127.0.0.7");
  EXPECT_EQ(PeerKey(V6("::ffff:10.1.2.3")), "10.1.2.3");
  EXPECT_EQ(PeerKey(V6("::1")), "::1");
  // One host with a /64 cannot multiply its share by changing the low bits.
  EXPECT_EQ(PeerKey(V6("2001:db8:1:2:aaaa::1")), PeerKey(V6("2001:db8:1:2:bbbb::2")));
  EXPECT_NE(PeerKey(V6("2001:db8:1:2::1")), PeerKey(V6("2001:db8:1:3::1")));
}

TEST(ConnectionTable, AFullTableEvictsTheMostStalledIdleOrHalfReadConnection) {
  ConnectionTable t({3, 10});
  auto t0 = Clock::now();
  auto a = t.Admit(10, "p", t0);
  auto b = t.Admit(11, "p", t0 + milliseconds(1));
  auto c = t.Admit(12, "p", t0 + milliseconds(2));
  ASSERT_TRUE(a.id && b.id && c.id);
  // a made progress late, b is answering (busy): c is now the most stalled evictable one.
  t.Progress(a.id, ConnPhase::kReadingHead, t0 + milliseconds(5));
  t.Progress(b.id, ConnPhase::kBusy, t0 + milliseconds(3));
  auto d = t.Admit(13, "q", t0 + milliseconds(6));
  ASSERT_NE(d.id, 0u) << d.why;
  EXPECT_EQ(d.evicted_fd, 12);
  EXPECT_TRUE(t.Evicted(c.id));
  EXPECT_EQ(t.live(), 3u);
  EXPECT_EQ(t.size(), 4u);  // c still closing
  t.Remove(c.id);
  // Next in line: a (progress at 5) before d (6); b is busy and never chosen.
  auto e = t.Admit(14, "q", t0 + milliseconds(7));
  EXPECT_EQ(e.evicted_fd, 10);
  EXPECT_EQ(t.evictions(), 2u);
}

TEST(ConnectionTable, RefusesOnlyWhenEveryCandidateIsBusy) {
  ConnectionTable t({2, 10});
  auto t0 = Clock::now();
  auto a = t.Admit(10, "p", t0);
  auto b = t.Admit(11, "p", t0);
  t.Progress(a.id, ConnPhase::kBusy, t0);
  t.Progress(b.id, ConnPhase::kBusy, t0);
  auto c = t.Admit(12, "p", t0);
  EXPECT_EQ(c.id, 0u);
  EXPECT_NE(c.why.find("--max-connections"), std::string::npos) << c.why;
  t.Progress(b.id, ConnPhase::kIdle, t0);  // b's answer went out; it waits for the next request
  c = t.Admit(12, "p", t0);
  EXPECT_NE(c.id, 0u);
  EXPECT_EQ(c.evicted_fd, 11);
}

TEST(ConnectionTable, APeerAtItsCapDisplacesOnlyItsOwnConnections) {
  ConnectionTable t({100, 2});
  auto t0 = Clock::now();
  auto other = t.Admit(9, "other", t0);  // the oldest of all, from another peer
  auto a = t.Admit(10, "p", t0 + milliseconds(1));
  auto b = t.Admit(11, "p", t0 + milliseconds(2));
  ASSERT_TRUE(other.id && a.id && b.id);
  auto c = t.Admit(12, "p", t0 + milliseconds(3));
  EXPECT_EQ(c.evicted_fd, 10);  // p's own oldest, not "other"
  EXPECT_FALSE(t.Evicted(other.id));
  // All of p's connections busy: p is refused, naming the per-peer limit; others still get in.
  t.Progress(b.id, ConnPhase::kBusy, t0);
  t.Progress(c.id, ConnPhase::kBusy, t0);
  auto d = t.Admit(13, "p", t0 + milliseconds(4));
  EXPECT_EQ(d.id, 0u);
  EXPECT_NE(d.why.find("--max-connections-per-peer"), std::string::npos) << d.why;
  EXPECT_NE(t.Admit(14, "q", t0 + milliseconds(5)).id, 0u);
}

TEST(ConnectionTable, ACandidateWithUnreadBytesIsPassedOverForTheNextOldest) {
  ConnectionTable t({100, 3});
  auto t0 = Clock::now();
  auto a = t.Admit(10, "p", t0);  // oldest, but its request waits unread in its socket
  auto b = t.Admit(11, "p", t0 + milliseconds(1));
  auto c = t.Admit(12, "p", t0 + milliseconds(2));
  ASSERT_TRUE(a.id && b.id && c.id);
  auto unread_on_10 = [](int fd) { return fd == 10; };
  auto d = t.Admit(13, "p", t0 + milliseconds(3), unread_on_10);
  EXPECT_EQ(d.evicted_fd, 11);
  EXPECT_FALSE(t.Evicted(a.id));
  // a now counts as progressing at 3 ms, so c (2 ms) is the oldest next.
  auto e = t.Admit(14, "p", t0 + milliseconds(4));
  EXPECT_EQ(e.evicted_fd, 12);
}

TEST(ConnectionTable, UnreadBytesEverywhereStillEvictAfterABoundedNumberOfChecks) {
  ConnectionTable t({100, 20});
  auto t0 = Clock::now();
  for (int i = 0; i < 20; ++i) ASSERT_NE(t.Admit(100 + i, "p", t0 + milliseconds(i)).id, 0u);
  int checks = 0;
  auto always = [&checks](int) { ++checks; return true; };
  auto x = t.Admit(200, "p", t0 + milliseconds(50), always);
  ASSERT_NE(x.id, 0u) << x.why;
  EXPECT_EQ(checks, ConnectionTable::kUnreadChecks);
  // The 8 checked ones were refreshed; the next oldest (the ninth) goes.
  EXPECT_EQ(x.evicted_fd, 100 + ConnectionTable::kUnreadChecks);
}

TEST(ConnectionTable, ClosingConnectionsCannotPileUp) {
  ConnectionTable t({2, 10});
  auto t0 = Clock::now();
  size_t admitted = 0;
  for (int i = 0; i < 10; ++i) admitted += t.Admit(100 + i, "p", t0 + milliseconds(i)).id != 0;
  // 2 live + at most 2 evicted and not yet gone.
  EXPECT_EQ(t.size(), 4u);
  EXPECT_EQ(admitted, 4u);
}

TEST(WebGuard, OriginsAreNormalized) {
  EXPECT_EQ(*NormalizeOrigin("HTTPS://App.Example.com:443/"), "https://app.example.com");
  EXPECT_EQ(*NormalizeOrigin("http://[::1]:8080"), "http://[::1]:8080");
  EXPECT_FALSE(NormalizeOrigin("null").ok());
  EXPECT_FALSE(NormalizeOrigin("file://x").ok());
  EXPECT_FALSE(NormalizeOrigin("http://a.com/path").ok());
  EXPECT_FALSE(NormalizeOrigin("http://user@a.com").ok());
}

TEST(WebGuard, LoopbackOriginsAndHosts) {
  for (const char* o : {"http://localhost:3000", "http://127.0.0.1:8080", "http://127.9.9.9", "http://[::1]:1",
                        "https://LOCALHOST"})
    EXPECT_TRUE(IsLoopbackOrigin(o)) << o;
  for (const char* o : {"http://evil.com", "http://127.0.0.1.evil.com", "http://localhost.evil.com", "null",
                        "http://[::2]", "http://0.0.0.0", "http://sub.localhost"})
    EXPECT_FALSE(IsLoopbackOrigin(o)) << o;
  for (const char* h : {"localhost", "localhost:8080", "127.0.0.1:1", "127.200.0.1", "[::1]:8080", "[::1]"})
    EXPECT_TRUE(IsLoopbackHostHeader(h)) << h;
  for (const char* h : {"evil.com", "evil.com:8080", "127.0.0.1.nip.io:80", "::1", "[::2]:80", "127.0.0.1:x",
                        "localhost:8080:1", "", "10.0.0.1:8080", "2130706433"})
    EXPECT_FALSE(IsLoopbackHostHeader(h)) << h;
}

HttpRequest Req(std::map<std::string, std::string> headers, std::string method = "GET") {
  HttpRequest r;
  r.method = std::move(method);
  r.path = "/v1/execute";
  r.headers = std::move(headers);
  return r;
}

TEST(WebGuard, WithoutTokensHostMustBeLoopbackAndOriginLoopbackOrAllowed) {
  WebGuard g({false, {"https://app.example.com"}});
  EXPECT_FALSE(g.Check(Req({{"host", "127.0.0.1:9"}})));
  auto e = g.Check(Req({{"host", "evil.com:9"}}));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, ApiCode::kForbidden);
  EXPECT_NE(e->message.find("Host"), std::string::npos);
  EXPECT_TRUE(g.Check(Req({})));  // no Host at all: refused too
  e = g.Check(Req({{"host", "127.0.0.1:9"}, {"origin", "http://evil.com"}}));
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("Origin"), std::string::npos);
  EXPECT_FALSE(g.Check(Req({{"host", "127.0.0.1:9"}, {"origin", "http://localhost:5173"}})));
  EXPECT_FALSE(g.Check(Req({{"host", "127.0.0.1:9"}, {"origin", "https://APP.example.com"}})));
  EXPECT_TRUE(g.Check(Req({{"host", "127.0.0.1:9"}, {"origin", "null"}})));
}

TEST(WebGuard, WithTokensAnyHostButStillTheOriginRule) {
  WebGuard g({true, {}});
  EXPECT_FALSE(g.Check(Req({{"host", "sandbox.internal:8080"}})));
  EXPECT_TRUE(g.Check(Req({{"host", "sandbox.internal:8080"}, {"origin", "http://evil.com"}})));
}

TEST(WebGuard, CorsOnlyForAllowedOrigins) {
  WebGuard g({false, {"https://app.example.com"}});
  EXPECT_TRUE(g.CorsHeaders(Req({{"origin", "http://localhost:3000"}})).empty());
  auto h = g.CorsHeaders(Req({{"origin", "https://app.example.com"}}));
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0], (std::pair<std::string, std::string>{"Access-Control-Allow-Origin", "https://app.example.com"}));
  auto pre = g.Preflight(Req({{"origin", "https://app.example.com"}, {"access-control-request-method", "POST"}}, "OPTIONS"));
  ASSERT_TRUE(pre);
  EXPECT_EQ(pre->status, 204);
  EXPECT_FALSE(g.Preflight(Req({{"origin", "http://localhost:1"}, {"access-control-request-method", "POST"}}, "OPTIONS")));
}

TEST(Router, JsonRoutesTakeOnlyApplicationJson) {
  Router r;
  auto ok = [](HttpRequest&, ResponseStream&) -> Reply { return HttpResponse{}; };
  r.Add("POST", "/v1/execute", ok);
  r.Add("PUT", "/v1/sessions/{id}/files", ok, BodyKind::kRaw);
  struct NoStream : ResponseStream {
    bool Begin(int, const std::string&) override { return false; }
    bool Write(std::string_view) override { return false; }
  } out;
  auto status = [&](std::string method, std::string path, std::string ct, std::string body) {
    HttpRequest q;
    q.method = std::move(method);
    q.path = std::move(path);
    if (!ct.empty()) q.headers["content-type"] = ct;
    q.body = std::move(body);
    return r.Dispatch(q, out).response.status;
  };
  EXPECT_EQ(status("POST", "/v1/execute", "application/json", "{}"), 200);
  EXPECT_EQ(status("POST", "/v1/execute", "Application/JSON; charset=utf-8", "{}"), 200);
  EXPECT_EQ(status("POST", "/v1/execute", "", ""), 200);  // no body, no type
  for (const char* ct : {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                         "application/json-seq", "text/plain; a=application/json"})
    EXPECT_EQ(status("POST", "/v1/execute", ct, "{}"), 415) << ct;
  EXPECT_EQ(status("POST", "/v1/execute", "", "{}"), 415);           // a body without a type
  EXPECT_EQ(status("POST", "/v1/execute", "text/plain", ""), 415);   // an empty form post
  EXPECT_EQ(status("PUT", "/v1/sessions/s/files", "application/octet-stream", "raw"), 200);
  EXPECT_EQ(status("PUT", "/v1/sessions/s/files", "", "raw"), 200);
}

}  // namespace
}  // namespace lsb::server
