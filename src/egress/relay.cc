#include "egress/relay.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <string_view>
#include <vector>

namespace lsb::egress {
namespace {

constexpr size_t kBufferBytes = 64 << 10;

// One direction: bytes read from `from` wait in `buf` until `to` takes them.
struct Direction {
  int from, to;
  std::vector<char> buf = std::vector<char>(kBufferBytes);
  size_t start = 0, end = 0;
  bool eof = false, shut = false;
  uint64_t total = 0;
  StreamMask* mask = nullptr;  // what this direction must not pass on verbatim
  bool pending() const { return end > start; }
  bool done() const { return shut; }
};

// `bytes` (at most the buffer's size) become what waits for `to`.
void Put(Direction& d, const std::string& bytes) {
  std::copy(bytes.begin(), bytes.end(), d.buf.begin());
  d.start = 0;
  d.end = bytes.size();
}

// Reads what `from` has; false (with `why`) on a hard error or the byte budget.
bool Fill(Direction& d, const RelayLimits& l, std::string* why) {
  // With a mask, what it holds back and the new bytes must fit the buffer together.
  const size_t room = d.buf.size() - (d.mask ? d.mask->max_hold() : 0);
  ssize_t n = ::recv(d.from, d.buf.data(), room, 0);
  if (n < 0) {
    if (errno == EINTR || errno == EAGAIN) return true;
    *why = "connection reset";
    return false;
  }
  if (n == 0) {
    d.eof = true;
    if (d.mask) Put(d, d.mask->Flush());
    return true;
  }
  if (l.bytes_used && l.max_bytes && l.bytes_used->fetch_add(static_cast<uint64_t>(n)) + static_cast<uint64_t>(n) > l.max_bytes) {
    *why = "byte limit per execution (" + std::to_string(l.max_bytes) + " bytes) reached";
    return false;
  }
  d.start = 0;
  d.end = static_cast<size_t>(n);
  d.total += static_cast<uint64_t>(n);
  if (d.mask) Put(d, d.mask->Feed(std::string_view(d.buf.data(), d.end)));
  return true;
}

bool Drain(Direction& d, std::string* why) {
  ssize_t n = ::send(d.to, d.buf.data() + d.start, d.end - d.start, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n < 0) {
    if (errno == EINTR || errno == EAGAIN) return true;
    *why = "connection reset";
    return false;
  }
  d.start += static_cast<size_t>(n);
  return true;
}

}  // namespace

RelayResult Relay(int client, int upstream, const RelayLimits& limits, const Waits& w) {
  Direction up{client, upstream}, down{upstream, client};
  down.mask = limits.mask_down;
  RelayResult r;
  auto idle = std::chrono::milliseconds(limits.idle_timeout_ms);
  // Over once the upstream's side is done (it closed and the program has every byte): an HTTP
  // upstream closes after its answer (Connection: close), a TLS server after close_notify.
  while (!down.done()) {
    pollfd p[3];
    int n = 0;
    int slot[2][2] = {{-1, -1}, {-1, -1}};  // per direction: poll index of its read, its write
    Direction* dirs[2] = {&up, &down};
    for (int i = 0; i < 2; ++i) {
      Direction& d = *dirs[i];
      if (d.done()) continue;
      if (d.pending()) {
        slot[i][1] = n;
        p[n++] = {d.to, POLLOUT, 0};
      } else if (!d.eof) {
        slot[i][0] = n;
        p[n++] = {d.from, POLLIN, 0};
      }
    }
    p[n++] = {w.stop_fd, POLLIN, 0};
    int rc = ::poll(p, static_cast<nfds_t>(n), static_cast<int>(idle.count()));
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) {
      r.ended = "poll failed";
      break;
    }
    if (rc == 0) {
      r.ended = "idle timeout (" + std::to_string(limits.idle_timeout_ms) + " ms)";
      break;
    }
    if (p[n - 1].revents & POLLIN) {
      r.ended = "the proxy stopped";
      break;
    }
    bool failed = false;
    for (int i = 0; i < 2 && !failed; ++i) {
      Direction& d = *dirs[i];
      if (slot[i][0] >= 0 && p[slot[i][0]].revents) failed = !Fill(d, limits, &r.ended);
      else if (slot[i][1] >= 0 && p[slot[i][1]].revents) failed = !Drain(d, &r.ended);
      if (!failed && d.eof && !d.pending() && !d.shut) {
        ::shutdown(d.to, SHUT_WR);  // pass the half-close on
        d.shut = true;
      }
    }
    if (failed) break;
  }
  r.up = up.total;
  r.down = down.total;
  return r;
}

}  // namespace lsb::egress
