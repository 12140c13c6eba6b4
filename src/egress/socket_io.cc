#include "egress/socket_io.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lsb::egress {

using Clock = std::chrono::steady_clock;

Status WaitFor(int fd, short events, Clock::time_point deadline, const Waits& w) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return Error{ErrorCode::kTimeout, "timed out"};
    pollfd p[2] = {{fd, events, 0}, {w.stop_fd, POLLIN, 0}};
    int n = ::poll(p, w.stop_fd >= 0 ? 2 : 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::FromErrno("poll");
    if (w.stop_fd >= 0 && (p[1].revents & POLLIN)) return Error::Cancelled();
    if (p[0].revents) return OkStatus();
  }
}

Result<bool> ReadUntil(int fd, std::string& buf, std::string_view terminator, size_t max, Clock::time_point deadline,
                       const Waits& w) {
  while (buf.find(terminator) == std::string::npos) {
    if (buf.size() >= max) return false;
    LSB_TRY(WaitFor(fd, POLLIN, deadline, w));
    char tmp[4096];
    ssize_t n = ::recv(fd, tmp, std::min(sizeof tmp, max - buf.size()), 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return Error::FromErrno("recv");
    if (n == 0) return Error::Eof();
    buf.append(tmp, static_cast<size_t>(n));
  }
  return true;
}

Status ReadAtLeast(int fd, std::string& buf, size_t want, Clock::time_point deadline, const Waits& w) {
  while (buf.size() < want) {
    LSB_TRY(WaitFor(fd, POLLIN, deadline, w));
    char tmp[4096];
    ssize_t n = ::recv(fd, tmp, std::min(sizeof tmp, want - buf.size()), 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return Error::FromErrno("recv");
    if (n == 0) return Error::Eof();
    buf.append(tmp, static_cast<size_t>(n));
  }
  return OkStatus();
}

Status WriteAll(int fd, std::string_view data, Clock::time_point deadline, const Waits& w) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      LSB_TRY(WaitFor(fd, POLLOUT, deadline, w));
      continue;
    }
    if (n < 0) return Error::FromErrno("send");
    data.remove_prefix(static_cast<size_t>(n));
  }
  return OkStatus();
}

Result<UniqueFd> ConnectTo(const IpAddress& addr, uint16_t port, Clock::time_point deadline, const Waits& w) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (addr.family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    std::memcpy(&a->sin_addr, addr.bytes.data(), 4);
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    std::memcpy(&a->sin6_addr, addr.bytes.data(), 16);
    len = sizeof *a;
  }
  UniqueFd fd(::socket(addr.family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return Error::FromErrno("socket");
  int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0 && errno != EINPROGRESS)
    return Error::FromErrno("connect to " + addr.ToString() + ":" + std::to_string(port));
  LSB_TRY(WaitFor(fd.get(), POLLOUT, deadline, w));
  int err = 0;
  socklen_t el = sizeof err;
  ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &el);
  if (err != 0) return Error::FromErrno("connect to " + addr.ToString() + ":" + std::to_string(port), err);
  return fd;
}

}  // namespace lsb::egress
