#include "egress/proxy_connection.h"

#include <sys/socket.h>

#include <chrono>

#include "egress/http_head.h"
#include "egress/relay.h"
#include "egress/tls_end.h"
#include "egress/tls_relay.h"
#include "egress/tls_client_hello.h"

namespace lsb::egress {
namespace {

using Clock = std::chrono::steady_clock;
using protocol::AlertRule;

// The connection's event as it is built up.
struct Outcome {
  protocol::EgressInfo info;
  std::string decision = "denied";
  std::string why;  // for a refusal or failure
  Clock::time_point start = Clock::now();
};

protocol::Event Finish(Outcome& o) {
  o.info.duration_ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - o.start).count());
  const std::string target = o.info.host.empty() ? std::string("(no target)") : o.info.host + ":" + std::to_string(o.info.port);
  const std::string what = (o.info.method.empty() ? std::string("request") : o.info.method) + " " + target +
                           (o.info.path.empty() ? "" : o.info.path);
  protocol::Event e;
  if (o.decision == "denied") {
    e = protocol::MakeAlert(AlertRule::kNetworkDenied, "egress", what + " refused by the egress proxy: " + o.why);
  } else {
    e.kind = "egress";
    e.severity = protocol::Severity::kInfo;
    e.message = what + " " + o.decision + (o.info.resolved.empty() ? "" : " (" + o.info.resolved + ")") + ": " +
                std::to_string(o.info.bytes_up) + " bytes up, " + std::to_string(o.info.bytes_down) + " down, " +
                std::to_string(o.info.duration_ms) + " ms" + (o.why.empty() ? "" : "; " + o.why);
  }
  e.decision = o.decision;
  e.address = o.info.host.empty() ? std::string() : target;
  e.egress = o.info;
  if (e.egress.host.empty()) e.egress.host = "(unknown)";
  return e;
}

// A short answer to the program before the connection closes (best effort: it may be gone).
void Answer(int client, int status, const std::string& reason, const std::string& why, const Waits& w) {
  std::string body = "llm-sandbox egress proxy: " + why + "\n";
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + reason +
                     "\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n";
  (void)WriteAll(client, head + body, Clock::now() + std::chrono::seconds(2), w);
}

protocol::Event Deny(int client, Outcome& o, int status, const std::string& reason, std::string why, const Waits& w) {
  o.decision = "denied";
  o.why = std::move(why);
  Answer(client, status, reason, o.why, w);
  return Finish(o);
}

protocol::Event Fail(int client, Outcome& o, std::string why, const Waits& w, bool answer = true) {
  o.decision = "failed";
  o.why = std::move(why);
  if (answer) Answer(client, 502, "Bad Gateway", o.why, w);
  return Finish(o);
}

// The addresses `t` resolves to that pass the checks, in the resolver's order. A refusal (every
// address refused) is kPermissionDenied naming the first reason.
Result<std::vector<IpAddress>> ResolveChecked(const ProxyTarget& t, const ConnectionContext& ctx) {
  LSB_ASSIGN_OR_RETURN(std::vector<IpAddress> addrs, ctx.resolver->Resolve(t.host));
  std::vector<IpAddress> passed;
  std::string first_refusal;
  for (const IpAddress& a : addrs) {
    Verdict v = ctx.rules->CheckAddress(a, t.port, *ctx.host_own);
    if (v.allowed) passed.push_back(a);
    else if (first_refusal.empty()) first_refusal = v.why;
  }
  if (passed.empty()) return Error{ErrorCode::kPermissionDenied, t.host + ": " + first_refusal};
  return passed;
}

// A connection to the first of `addrs` (each already checked) that accepts one: exactly the
// address checked, no second lookup between the verdict and the connection.
Result<UniqueFd> ConnectFirst(const std::vector<IpAddress>& addrs, uint16_t port, const ConnectionContext& ctx,
                              Outcome& o) {
  Error last{ErrorCode::kUnavailable, "no address"};
  for (const IpAddress& a : addrs) {
    auto fd = ConnectTo(a, port, Clock::now() + std::chrono::milliseconds(ctx.opts->connect_timeout_ms), ctx.waits);
    if (fd.ok()) {
      o.info.resolved = (a.family == AF_INET6 ? "[" + a.ToString() + "]" : a.ToString()) + ":" + std::to_string(port);
      return fd;
    }
    last = fd.error();
  }
  return last;
}

// After "200 Connection Established": the first TLS record, its SNI checked against the target.
// `hello` holds what the program sent right behind its CONNECT, if anything.
Result<std::string> CheckedClientHello(int client, std::string hello, const ProxyTarget& t, const ConnectionContext& ctx,
                                       std::string* why) {
  auto deadline = Clock::now() + std::chrono::milliseconds(ctx.opts->head_timeout_ms);
  LSB_TRY(ReadAtLeast(client, hello, 5, deadline, ctx.waits));
  ClientHelloSni sni = ParseClientHelloSni(hello);
  if (sni.status == ClientHelloSni::Status::kNeedMore) {
    LSB_TRY(ReadAtLeast(client, hello, sni.record_bytes, deadline, ctx.waits));
    sni = ParseClientHelloSni(hello);
  }
  using S = ClientHelloSni::Status;
  const bool literal = ParseIpLiteral(t.host).has_value();
  if (sni.status == S::kNotTls) *why = "a CONNECT tunnel carries TLS only, and this is not a TLS ClientHello";
  else if (sni.status != S::kOk) *why = "the TLS ClientHello could not be read (malformed or split over records)";
  else if (!sni.sni && !literal) *why = "the TLS ClientHello names no server (SNI), so its target cannot be checked";
  else if (sni.sni && *sni.sni != t.host) *why = "the TLS ClientHello names '" + *sni.sni + "', not the CONNECT target '" + t.host + "'";
  if (!why->empty()) return Error{ErrorCode::kPermissionDenied, *why};
  return hello;
}

// A short answer inside a terminated tunnel (best effort).
void TlsAnswer(TlsEnd& end, int status, const std::string& reason, const std::string& why) {
  std::string body = "llm-sandbox egress proxy: " + why + "\n";
  (void)end.Write("HTTP/1.1 " + std::to_string(status) + " " + reason +
                      "\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\n\r\n" + body,
                  Clock::now() + std::chrono::seconds(2));
  end.Close(Clock::now() + std::chrono::seconds(2));
}

// CONNECT to a host with network.secrets (its SNI already checked): the proxy is the TLS server,
// with the box CA's certificate for the host, reads the request inside, adds the headers, and
// speaks TLS to the upstream itself, verifying its certificate and name.
protocol::Event Intercept(int client, const std::string& hello, const ProxyTarget& target,
                          const std::vector<IpAddress>& addrs, const std::vector<std::pair<std::string, std::string>>& injected,
                          StreamMask& mask, const ConnectionContext& ctx, Outcome& o) {
  const Waits& w = ctx.waits;
  auto deadline = Clock::now() + std::chrono::milliseconds(ctx.opts->head_timeout_ms);
  auto server_ctx = ctx.ca->ServerContextFor(target.host);
  if (!server_ctx.ok()) return Fail(client, o, server_ctx.error().message, w, false);
  auto down = TlsEnd::Server(server_ctx->get(), client, hello, w);
  if (!down.ok()) return Fail(client, o, down.error().message, w, false);
  if (auto st = (*down)->Handshake(deadline); !st.ok())
    return Fail(client, o, "TLS with the program: " + st.error().message, w, false);
  std::string req;
  std::vector<char> chunk(16 << 10);
  while (req.find("\r\n\r\n") == std::string::npos) {
    if (req.size() > kMaxHeadBytes) {
      o.decision = "denied";
      o.why = "the request head exceeds 16 KiB";
      TlsAnswer(**down, 431, "Request Header Fields Too Large", o.why);
      return Finish(o);
    }
    auto n = (*down)->Read(chunk.data(), chunk.size(), deadline);
    if (!n.ok() || *n == 0) return Fail(client, o, "no request inside the TLS tunnel", w, false);
    req.append(chunk.data(), *n);
  }
  const size_t head_end = req.find("\r\n\r\n") + 4;
  auto head = ParseRequestHead(std::string_view(req).substr(0, head_end));
  std::string bad = !head.ok() ? "malformed request: " + head.error().message
                    : head->target.empty() || head->target[0] != '/'
                        ? std::string("inside the tunnel a request names a path (origin form), not '") + head->target + "'"
                        : std::string();
  if (!bad.empty()) {
    o.decision = "denied";
    o.why = bad;
    TlsAnswer(**down, 400, "Bad Request", bad);
    return Finish(o);
  }
  o.info.method = head->method;
  o.info.path = PathForEvents(head->target);
  ProxyTarget inner = target;
  inner.path = head->target;
  const std::string first = UpstreamHead(*head, inner, injected, 443) + req.substr(head_end);
  auto upstream = ConnectFirst(addrs, target.port, ctx, o);
  if (!upstream.ok()) {
    o.decision = "failed";
    o.why = upstream.error().message;
    TlsAnswer(**down, 502, "Bad Gateway", o.why);
    return Finish(o);
  }
  auto up = TlsEnd::Client(ctx.upstream_tls, upstream->get(), target.host, w);
  Status st = up.ok() ? (*up)->Handshake(Clock::now() + std::chrono::milliseconds(ctx.opts->connect_timeout_ms))
                      : Status(up.error());
  if (st.ok()) st = (*up)->Write(first, deadline);
  if (!st.ok()) {
    o.decision = "failed";
    o.why = "TLS with " + target.host + ": " + st.error().message;
    TlsAnswer(**down, 502, "Bad Gateway", o.why);
    return Finish(o);
  }
  if (ctx.bytes_used) ctx.bytes_used->fetch_add(first.size());
  RelayLimits limits{ctx.opts->idle_timeout_ms, ctx.bytes_used, ctx.opts->max_bytes_per_run, &mask, ctx.rate};
  RelayResult r = RelayTls(**down, **up, limits, w);
  o.info.bytes_up = r.up + first.size();
  o.info.bytes_down = r.down;
  o.decision = r.ended.rfind("byte limit", 0) == 0 ? "denied" : "allowed";
  o.why = r.ended;
  std::string names;
  for (const auto& h : injected) names += (names.empty() ? "" : ", ") + h.first;
  o.why += std::string(o.why.empty() ? "" : "; ") + "TLS terminated by the proxy; network.secrets header(s) added: " + names;
  return Finish(o);
}

}  // namespace

protocol::Event ServeConnection(int client, const ConnectionContext& ctx) {
  Outcome o;
  const Waits& w = ctx.waits;
  std::string buf;
  auto got = ReadUntil(client, buf, "\r\n\r\n", kMaxHeadBytes, Clock::now() + std::chrono::milliseconds(ctx.opts->head_timeout_ms), w);
  if (!got.ok()) return Fail(client, o, "no request head: " + got.error().message, w, false);
  if (!*got) return Deny(client, o, 431, "Request Header Fields Too Large", "the request head exceeds 16 KiB", w);
  const size_t head_end = buf.find("\r\n\r\n") + 4;
  auto head = ParseRequestHead(std::string_view(buf).substr(0, head_end));
  if (!head.ok()) return Deny(client, o, 400, "Bad Request", "malformed request: " + head.error().message, w);
  o.info.method = head->method;
  const bool connect = head->method == "CONNECT";
  auto target = connect ? ParseConnectTarget(head->target) : ParseAbsoluteTarget(head->target);
  if (!target.ok()) return Deny(client, o, 400, "Bad Request", target.error().message, w);
  o.info.host = target->host;
  o.info.port = target->port;
  o.info.path = PathForEvents(target->path);
  if (Verdict v = ctx.rules->CheckTarget(target->host, target->port); !v.allowed)
    return Deny(client, o, 403, "Forbidden", v.why, w);
  auto addrs = ResolveChecked(*target, ctx);
  if (!addrs.ok() && addrs.error().IsPermissionDenied()) return Deny(client, o, 403, "Forbidden", addrs.error().message, w);
  if (!addrs.ok()) return Fail(client, o, addrs.error().message, w);
  std::vector<const HeaderSecret*> secrets;
  if (ctx.secrets) secrets = SecretsFor(*ctx.secrets, target->host);
  // Fail closed: without a box CA a tunnel's bytes are the program's own TLS, where the header
  // cannot be added.
  if (connect && !secrets.empty() && (!ctx.ca || !ctx.upstream_tls))
    return Deny(client, o, 403, "Forbidden",
                "network.secrets adds a header for '" + target->host +
                    "', which over HTTPS needs the proxy to terminate TLS (not implemented yet): reach it over "
                    "http://, or remove the secret",
                w);
  auto deadline = Clock::now() + std::chrono::milliseconds(ctx.opts->head_timeout_ms);
  std::string first;  // what goes upstream before the relay
  std::vector<std::pair<std::string, std::string>> injected;
  std::vector<std::string> masked;
  for (const HeaderSecret* sec : secrets) {
    injected.emplace_back(sec->header, sec->value);
    masked.insert(masked.end(), sec->masked.begin(), sec->masked.end());
  }
  StreamMask mask(std::move(masked));
  if (connect) {
    // The tunnel's TLS is checked before anything reaches the upstream: a hello naming another
    // server never leaves the proxy.
    if (!WriteAll(client, "HTTP/1.1 200 Connection Established\r\n\r\n", deadline, w).ok())
      return Fail(client, o, "the program closed the connection", w, false);
    buf.erase(0, head_end);  // a client may send its hello right behind the CONNECT: kept
    std::string why;
    auto hello = CheckedClientHello(client, std::move(buf), *target, ctx, &why);
    if (!hello.ok() && !why.empty()) {
      o.decision = "denied";
      o.why = why;
      return Finish(o);  // the tunnel is open: no HTTP answer fits any more; closing it is the answer
    }
    if (!hello.ok()) return Fail(client, o, "no TLS ClientHello: " + hello.error().message, w, false);
    if (!secrets.empty()) return Intercept(client, *hello, *target, *addrs, injected, mask, ctx, o);
    first = std::move(*hello);
  } else {
    first = UpstreamHead(*head, *target, injected) + buf.substr(head_end);
  }
  auto upstream = ConnectFirst(*addrs, target->port, ctx, o);
  if (!upstream.ok()) return Fail(client, o, upstream.error().message, w, !connect);
  if (ctx.bytes_used) ctx.bytes_used->fetch_add(first.size());
  if (!WriteAll(upstream->get(), first, deadline, w).ok()) return Fail(client, o, "the upstream closed the connection", w, !connect);
  RelayLimits limits{ctx.opts->idle_timeout_ms, ctx.bytes_used, ctx.opts->max_bytes_per_run,
                     secrets.empty() ? nullptr : &mask, ctx.rate};
  RelayResult r = Relay(client, upstream->get(), limits, w);
  o.info.bytes_up = r.up + first.size();
  o.info.bytes_down = r.down;
  o.decision = "allowed";
  o.why = r.ended;
  if (!secrets.empty()) {
    std::string names;
    for (const HeaderSecret* sec : secrets) names += (names.empty() ? "" : ", ") + sec->header;
    o.why += std::string(o.why.empty() ? "" : "; ") + "network.secrets header(s) added: " + names;
  }
  if (r.ended.rfind("byte limit", 0) == 0) {
    o.decision = "denied";  // cut by a limit: an alert names it
  }
  return Finish(o);
}

}  // namespace lsb::egress
