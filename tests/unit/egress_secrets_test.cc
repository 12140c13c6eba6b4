// network.secrets in the egress proxy (src/egress/secrets.h, stream_mask.h): values filled from a
// secrets file or the environment, refused when missing or hostile, injected upstream for the named
// host only (replacing the program's own header of that name), masked in what comes back, and
// absent from every event. The proxy runs over real sockets on 127.0.0.1.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "egress/egress_proxy.h"
#include "egress/http_head.h"
#include "egress/secrets.h"
#include "egress/stream_mask.h"

namespace lsb::egress {
namespace {

NetworkSecret Secret(std::string host, std::string header, std::string value) {
  return NetworkSecret{std::move(host), std::move(header), std::move(value)};
}

std::string TempFile(const std::string& text, mode_t mode) {
  char path[] = "/tmp/lsb-secrets-XXXXXX";
  int fd = ::mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::fchmod(fd, mode);
  ::close(fd);
  return path;
}

TEST(EgressSecrets, FileFirstThenEnvironmentAndLiteralDollars) {
  ::setenv("LSB_UT_ENV_TOKEN", "from-env", 1);
  std::map<std::string, std::string> file{{"LSB_UT_FILE_TOKEN", "from-file"}, {"LSB_UT_ENV_TOKEN", "file-wins"}};
  auto r = ResolveSecrets({Secret("api.test", "Authorization", "Bearer ${LSB_UT_FILE_TOKEN}"),
                           Secret("api.test", "X-Key", "$${LSB_UT_ENV_TOKEN}=${LSB_UT_ENV_TOKEN}")},
                          file, "f");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)[0].value, "Bearer from-file");
  EXPECT_EQ((*r)[0].masked, (std::vector<std::string>{"Bearer from-file", "from-file"}));
  EXPECT_EQ((*r)[1].value, "${LSB_UT_ENV_TOKEN}=file-wins");
  auto env = ResolveSecrets({Secret("api.test", "X-Key", "${LSB_UT_ENV_TOKEN}")}, {}, "");
  ASSERT_TRUE(env.ok());
  EXPECT_EQ((*env)[0].value, "from-env");
  // A variable's value shorter than 4 bytes is not masked on its own (it would mask noise).
  auto shorter = ResolveSecrets({Secret("api.test", "X-Key", "k=${V}")}, {{"V", "abc"}}, "f");
  ASSERT_TRUE(shorter.ok());
  EXPECT_EQ((*shorter)[0].masked, (std::vector<std::string>{"k=abc"}));
}

TEST(EgressSecrets, AMissingVariableIsAClearErrorThatNamesNoValue) {
  ::unsetenv("LSB_UT_MISSING");
  auto r = ResolveSecrets({Secret("api.test", "Authorization", "Bearer ${LSB_UT_MISSING}")}, {{"OTHER", "s3cr3t"}},
                          "/etc/lsb.secrets");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("${LSB_UT_MISSING}"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("network.secrets[0] (api.test, Authorization)"), std::string::npos);
  EXPECT_NE(r.error().message.find("/etc/lsb.secrets"), std::string::npos);
  EXPECT_EQ(r.error().message.find("s3cr3t"), std::string::npos);
}

TEST(EgressSecrets, AValueThatWouldSplitTheHeaderIsRefused) {
  for (std::string bad : {std::string("a\r\nX-Evil: 1"), std::string("a\nb"), std::string("a\0b", 3)}) {
    auto r = ResolveSecrets({Secret("api.test", "X-Key", "${V}")}, {{"V", bad}}, "f");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("CR, LF or NUL"), std::string::npos);
    EXPECT_EQ(r.error().message.find("X-Evil"), std::string::npos);
  }
  EXPECT_FALSE(ResolveSecrets({Secret("a.test", "X", "${V}")}, {{"V", std::string(9000, 'a')}}, "f").ok());
  EXPECT_FALSE(ResolveSecrets({Secret("a.test", "X", "${V}")}, {{"V", ""}}, "f").ok());
}

TEST(EgressSecrets, SecretsFileFormatAndMode) {
  std::string good = TempFile("# comment\n\nTOKEN=abc=def \nOTHER=x\r\n", 0600);
  auto r = ReadSecretsFile(good);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->at("TOKEN"), "abc=def ");
  EXPECT_EQ(r->at("OTHER"), "x");
  std::string open = TempFile("TOKEN=abc\n", 0644);
  auto o = ReadSecretsFile(open);
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.error().message.find("chmod 600"), std::string::npos);
  std::string bad = TempFile("TOKEN=abc\nthis is not it\n", 0600);
  auto b = ReadSecretsFile(bad);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("line 2"), std::string::npos) << b.error().message;
  std::string twice = TempFile("T=1\nT=2\n", 0600);
  EXPECT_FALSE(ReadSecretsFile(twice).ok());
  EXPECT_FALSE(ReadSecretsFile("/nonexistent/lsb.secrets").ok());
  EgressOptions opts;
  EXPECT_TRUE(*ApplyEgressFlag("--secrets-file", good, opts));
  EXPECT_EQ(opts.secrets_file, good);
  EXPECT_FALSE(ApplyEgressFlag("--secrets-file", open, opts).ok());
  for (const auto& p : {good, open, bad, twice}) ::unlink(p.c_str());
}

TEST(EgressStreamMask, MasksWholeAndSplitOccurrences) {
  StreamMask m({"SECRET-VALUE"});
  std::string out = m.Feed("a SECRET-VALUE b SECRET-");  // one call per statement: in order
  out += m.Feed("VAL");
  out += m.Feed("UE c SECRET");
  out += m.Flush();
  EXPECT_EQ(out, "a ************ b ************ c SECRET");
  StreamMask one({"xy"});
  std::string bytes;
  for (char c : std::string("axyxxyb")) bytes += one.Feed(std::string(1, c));
  bytes += one.Flush();
  EXPECT_EQ(bytes, "a**x**b");
  EXPECT_EQ(one.max_hold(), 1u);
}

TEST(EgressHttp, UpstreamHeadReplacesTheProgramsHeaderWithTheInjectedOne) {
  auto head = ParseRequestHead("GET http://api.test/x HTTP/1.1\r\nauthorization: Bearer fake\r\nAccept: */*\r\n\r\n");
  ASSERT_TRUE(head.ok());
  auto t = ParseAbsoluteTarget(head->target);
  std::string up = UpstreamHead(*head, *t, {{"Authorization", "Bearer real"}});
  EXPECT_EQ(up.find("fake"), std::string::npos) << up;
  EXPECT_NE(up.find("\r\nAuthorization: Bearer real\r\n"), std::string::npos) << up;
  EXPECT_NE(up.find("\r\nAccept: */*\r\n"), std::string::npos) << up;
}

// --- through the proxy over real sockets ---------------------------------------------------------

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

std::string Exchange(uint16_t port, const std::string& request) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  (void)!::write(fd.get(), request.data(), request.size());
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd.get(), buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

// Answers each connection by echoing the request head it got back as the body (a reflecting
// upstream), and records the heads.
struct EchoUpstream {
  uint16_t port = 0;
  UniqueFd fd = Listen(&port);
  std::vector<std::string> seen;
  std::thread t;
  void Serve(int connections) {
    t = std::thread([this, connections] {
      for (int i = 0; i < connections; ++i) {
        UniqueFd c(::accept(fd.get(), nullptr, nullptr));
        std::string head;
        char buf[4096];
        while (head.find("\r\n\r\n") == std::string::npos) {
          ssize_t n = ::read(c.get(), buf, sizeof buf);
          if (n <= 0) break;
          head.append(buf, static_cast<size_t>(n));
        }
        seen.push_back(head);
        std::string answer = "HTTP/1.1 200 OK\r\nX-Echo: " + head.substr(0, head.find("\r\n")) +
                             "\r\nContent-Length: " + std::to_string(head.size()) + "\r\nConnection: close\r\n\r\n" + head;
        (void)!::send(c.get(), answer.data(), answer.size(), MSG_NOSIGNAL);
      }
    });
  }
  ~EchoUpstream() {
    if (t.joinable()) t.join();
  }
};

TEST(EgressProxy, InjectsASecretForItsHostOnlyMasksItsEchoAndKeepsItOutOfEvents) {
  const std::string token = "tok-" + std::to_string(::getpid()) + "-d41d8cd98f00b204";
  EchoUpstream up;
  up.Serve(2);
  const std::string port = std::to_string(up.port);
  UniqueFd listener;
  uint16_t proxy_port = 0;
  listener = Listen(&proxy_port);
  EgressOptions opts;
  opts.pins["api.test"] = {*ParseIpLiteral("127.0.0.1")};
  opts.pins["other.test"] = {*ParseIpLiteral("127.0.0.1")};
  auto rules = EgressRules::Parse({"api.test", "other.test", "127.0.0.1:" + port, "127.0.0.1:443"}, {});
  ASSERT_TRUE(rules.ok());
  auto secrets = ResolveSecrets({Secret("api.test", "Authorization", "Bearer ${LSB_UT_TOKEN}")},
                                {{"LSB_UT_TOKEN", token}}, "f");
  ASSERT_TRUE(secrets.ok());
  auto made = EgressProxy::Create(std::move(listener), std::move(*rules), opts, *secrets);
  ASSERT_TRUE(made.ok());
  auto& proxy = *made;
  proxy->BeginRun();
  std::string a = Exchange(proxy_port, "GET http://api.test:" + port + "/v1?k=" + token +
                                           " HTTP/1.1\r\nAuthorization: Bearer fake\r\n\r\n");
  std::string b = Exchange(proxy_port, "GET http://other.test:" + port + "/ HTTP/1.1\r\n\r\n");
  // A CONNECT to the secret's host cannot carry the header: refused, not passed without it.
  std::string c = Exchange(proxy_port, "CONNECT api.test:443 HTTP/1.1\r\n\r\n");
  up.t.join();
  ASSERT_EQ(up.seen.size(), 2u);
  EXPECT_NE(up.seen[0].find("\r\nAuthorization: Bearer " + token + "\r\n"), std::string::npos) << up.seen[0];
  EXPECT_EQ(up.seen[0].find("fake"), std::string::npos) << up.seen[0];
  EXPECT_EQ(up.seen[1].find(token), std::string::npos) << up.seen[1];
  EXPECT_EQ(up.seen[1].find("Authorization"), std::string::npos) << up.seen[1];
  // The echo came back with the value masked, in the body and in the header line, and so did the
  // variable's value on its own (the query).
  EXPECT_EQ(a.find(token), std::string::npos) << a;
  EXPECT_NE(a.find("/v1?k=" + std::string(token.size(), '*')), std::string::npos) << a;
  EXPECT_NE(a.find("Authorization: " + std::string(("Bearer " + token).size(), '*')), std::string::npos) << a;
  EXPECT_EQ(c.rfind("HTTP/1.1 403", 0), 0u) << c;
  EXPECT_NE(c.find("network.secrets"), std::string::npos) << c;
  auto events = proxy->TakeEvents(std::chrono::milliseconds(2000));
  ASSERT_EQ(events.size(), 3u);
  for (const auto& e : events) EXPECT_EQ(nlohmann::json(e).dump().find(token), std::string::npos) << nlohmann::json(e).dump();
  // An event is recorded when its connection's thread ends, which may come after the next
  // exchange began: found by what it is, not by its place.
  auto event = [&](const std::string& host, const std::string& method) {
    for (const auto& e : events)
      if (e.egress.host == host && e.egress.method == method) return e;
    ADD_FAILURE() << "no event for " << method << " " << host;
    return protocol::Event{};
  };
  auto ea = event("api.test", "GET"), eb = event("other.test", "GET"), ec = event("api.test", "CONNECT");
  EXPECT_NE(ea.message.find("network.secrets header(s) added: Authorization"), std::string::npos) << ea.message;
  EXPECT_EQ(eb.message.find("network.secrets"), std::string::npos);
  EXPECT_EQ(ec.rule, protocol::AlertRule::kNetworkDenied);
}

}  // namespace
}  // namespace lsb::egress
