#include "runtime/docker/connection.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>
#include <memory>

namespace lsb::docker {
namespace {

// Non-blocking connect + poll, so that a black-holed tcp address fails in `timeout`, not minutes.
Status ConnectWithin(int fd, const sockaddr* addr, socklen_t len, std::chrono::milliseconds timeout) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) return Error::FromErrno("fcntl");
  if (connect(fd, addr, len) < 0) {
    if (errno != EINPROGRESS && errno != EAGAIN) return Error::FromErrno("connect");
    pollfd p{fd, POLLOUT, 0};
    int n;
    do {
      n = poll(&p, 1, static_cast<int>(timeout.count()));
    } while (n < 0 && errno == EINTR);
    if (n < 0) return Error::FromErrno("poll");
    if (n == 0) return Error{"connect: timed out after " + std::to_string(timeout.count()) + " ms", ETIMEDOUT};
    int err = 0;
    socklen_t elen = sizeof(err);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0) return Error::FromErrno("getsockopt");
    if (err != 0) return Error::FromErrno("connect", err);
  }
  if (fcntl(fd, F_SETFL, flags) < 0) return Error::FromErrno("fcntl");
  return OkStatus();
}

}  // namespace

std::string EngineDownHint(const Endpoint& ep) {
  if (ep.kind == Endpoint::Kind::kUnix) {
    return "is a Docker engine running? Start one with `sudo scripts/ensure-docker.sh` (or `dockerd &`), "
           "point DOCKER_HOST at another engine, or use --backend native";
  }
  return "is a Docker engine listening there? Check DOCKER_HOST, or use --backend native";
}

Status SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Error{"send: timed out", ETIMEDOUT};
      return Error::FromErrno("send");
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return OkStatus();
}

Status SetIoTimeout(int fd, std::chrono::milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = timeout.count() / 1000;
  tv.tv_usec = (timeout.count() % 1000) * 1000;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
    return Error::FromErrno("setsockopt(SO_RCVTIMEO)");
  return OkStatus();
}

Result<UniqueFd> Connect(const Endpoint& ep, std::chrono::milliseconds timeout) {
  auto fail = [&](const Error& e) {
    return Error{"cannot reach the Docker engine at " + ep.ToString() + ": " + e.message + "; " +
                     EngineDownHint(ep),
                 e.sys_errno};
  };
  if (ep.kind == Endpoint::Kind::kUnix) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (ep.path.size() >= sizeof(addr.sun_path)) return Error{"Docker socket path too long: " + ep.path};
    std::memcpy(addr.sun_path, ep.path.c_str(), ep.path.size() + 1);
    UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) return fail(Error::FromErrno("socket"));
    auto st = ConnectWithin(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr), timeout);
    if (!st.ok()) return fail(st.error());
    return fd;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string port = std::to_string(ep.port);
  int rc = getaddrinfo(ep.host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) return fail(Error{std::string("resolve ") + ep.host + ": " + gai_strerror(rc)});
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owner(res, freeaddrinfo);
  Error last{"no address"};
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    UniqueFd fd(socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd) {
      last = Error::FromErrno("socket");
      continue;
    }
    auto st = ConnectWithin(fd.get(), ai->ai_addr, ai->ai_addrlen, timeout);
    if (!st.ok()) {
      last = st.error();
      continue;
    }
    int one = 1;
    setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // frames are small
    return fd;
  }
  return fail(last);
}

}  // namespace lsb::docker
