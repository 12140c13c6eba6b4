// llm-sandbox ready: exit 0 when the daemon on this machine's loopback answers GET /readyz with
// 200, 1 otherwise. The orchestrator image has no shell or curl (FROM scratch), so this is its
// health check: Swarm's rolling update waits for a new daemon to be ready before it stops the
// next node's (deploy/swarm/stack.yml, docs/scale-out.md).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/unique_fd.h"
#include "cli/commands.h"

namespace lsb::cli {
namespace {

constexpr const char* kUsage =
    "usage: llm-sandbox ready [--port PORT] [--timeout SECS]\n"
    "  exit 0 if the daemon at 127.0.0.1:PORT (default 8080) answers GET /readyz with 200 within\n"
    "  SECS (default 3, 1 to 60), else 1 (a daemon shutting down answers 503)\n";

// A whole number in [lo, hi], or -1.
long Bounded(const std::string& s, long lo, long hi) {
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  return (!s.empty() && *end == '\0' && v >= lo && v <= hi) ? v : -1;
}

int Fail(const std::string& why) {
  std::fprintf(stderr, "llm-sandbox ready: %s\n", why.c_str());
  return 1;
}

}  // namespace

int ReadyCommand(const Args& args) {
  long port = 8080, timeout_s = 3;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") { std::fputs(kUsage, stdout); return 0; }
    bool has_value = i + 1 < args.size();
    if (a == "--port" && has_value) {
      port = Bounded(args[++i], 1, 65535);
      if (port < 0) { std::fprintf(stderr, "--port: a port from 1 to 65535\n%s", kUsage); return 2; }
    } else if (a == "--timeout" && has_value) {
      timeout_s = Bounded(args[++i], 1, 60);
      if (timeout_s < 0) { std::fprintf(stderr, "--timeout: whole seconds from 1 to 60\n%s", kUsage); return 2; }
    } else {
      std::fprintf(stderr, "llm-sandbox ready: unknown or incomplete option '%s'\n%s", a.c_str(), kUsage);
      return 2;
    }
  }
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return Fail(std::string("socket: ") + std::strerror(errno));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  auto wait_for = [&](short events) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd.get(), events, 0};
    return left.count() > 0 && ::poll(&p, 1, static_cast<int>(left.count())) == 1 && (p.revents & events);
  };
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    if (errno != EINPROGRESS) return Fail("connect to 127.0.0.1:" + std::to_string(port) + ": " + std::strerror(errno));
    int err = 0;
    socklen_t len = sizeof err;
    if (!wait_for(POLLOUT) || ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0)
      return Fail("connect to 127.0.0.1:" + std::to_string(port) + ": " + (err ? std::strerror(err) : "timed out"));
  }
  const std::string req = "GET /readyz HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (::send(fd.get(), req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size()))
    return Fail("could not send the request");
  // Only the status line matters: "HTTP/1.x 200 ".
  std::string head;
  char buf[256];
  while (head.find("\r\n") == std::string::npos && head.size() < 1024) {
    if (!wait_for(POLLIN)) return Fail("no answer within " + std::to_string(timeout_s) + " s");
    ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n <= 0) break;
    head.append(buf, static_cast<size_t>(n));
  }
  std::string status = head.substr(0, head.find("\r\n"));
  if (status.size() >= 12 && status.compare(0, 7, "HTTP/1.") == 0 && status.compare(8, 5, " 200 ") == 0) return 0;
  return Fail("not ready: " + (status.empty() ? std::string("no status line") : status));
}

}  // namespace lsb::cli
