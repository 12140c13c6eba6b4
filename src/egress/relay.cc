#include "egress/relay.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <string_view>
#include <vector>

#include "base/unique_fd.h"

namespace lsb::egress {
namespace {

constexpr size_t kBufferBytes = 64 << 10;
constexpr size_t kPipeBytes = 256 << 10;
// Moves one direction makes before the other gets its turn (both are served in one thread).
constexpr int kRoundsPerTurn = 16;

// One direction: bytes read from `from` wait until `to` takes them. Without a mask they wait in a
// pipe (splice(2): they never enter user space); with a mask, or when no pipe could be made, in a
// buffer.
struct Direction {
  int from, to;
  StreamMask* mask = nullptr;  // what this direction must not pass on verbatim
  UniqueFd pipe_r, pipe_w;
  size_t pipe_cap = 0, in_pipe = 0;
  std::vector<char> buf;
  size_t start = 0, end = 0;
  bool eof = false, shut = false;
  uint64_t total = 0;

  bool spliced() const { return pipe_w.valid(); }
  bool pending() const { return spliced() ? in_pipe > 0 : end > start; }
  bool done() const { return shut; }

  void Open() {
    int p[2];
    if (!mask && ::pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0) {
      pipe_r = UniqueFd(p[0]);
      pipe_w = UniqueFd(p[1]);
      int cap = ::fcntl(p[1], F_SETPIPE_SZ, static_cast<int>(kPipeBytes));
      if (cap < 0) cap = ::fcntl(p[1], F_GETPIPE_SZ);
      pipe_cap = cap > 0 ? static_cast<size_t>(cap) : 65536;
      return;
    }
    buf.resize(kBufferBytes);
  }
};

// `bytes` (at most the buffer's size) become what waits for `to`.
void Put(Direction& d, const std::string& bytes) {
  std::copy(bytes.begin(), bytes.end(), d.buf.begin());
  d.start = 0;
  d.end = bytes.size();
}

enum class Step { kMoved, kBlocked, kFailed };

// Reads what `from` has (only when nothing is pending), at most what the bandwidth cap grants;
// kFailed (with `why`) on a hard error, the byte budget or a stop while waiting for the cap. Bytes
// read count against the budget before they go on.
Step Fill(Direction& d, const RelayLimits& l, int stop_fd, std::string* why) {
  // With a mask, what it holds back and the new bytes must fit the buffer together.
  const size_t room = d.spliced() ? d.pipe_cap : d.buf.size() - (d.mask ? d.mask->max_hold() : 0);
  const size_t granted = AwaitGrant(l.rate, room, stop_fd);
  if (granted == 0) {
    *why = "the proxy stopped";
    return Step::kFailed;
  }
  ssize_t n;
  if (d.spliced()) {
    n = ::splice(d.from, nullptr, d.pipe_w.get(), nullptr, granted, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
  } else {
    n = ::recv(d.from, d.buf.data(), granted, 0);
  }
  if (l.rate) l.rate->Return(granted - static_cast<size_t>(std::max<ssize_t>(n, 0)));
  if (n < 0) {
    if (errno == EINTR || errno == EAGAIN) return Step::kBlocked;
    *why = "connection reset";
    return Step::kFailed;
  }
  if (n == 0) {
    d.eof = true;
    if (d.mask) Put(d, d.mask->Flush());
    return Step::kMoved;
  }
  if (!l.Charge(static_cast<uint64_t>(n), why)) return Step::kFailed;
  d.total += static_cast<uint64_t>(n);
  if (d.spliced()) {
    d.in_pipe = static_cast<size_t>(n);
  } else {
    d.start = 0;
    d.end = static_cast<size_t>(n);
    if (d.mask) Put(d, d.mask->Feed(std::string_view(d.buf.data(), d.end)));
  }
  return Step::kMoved;
}

Step Drain(Direction& d, std::string* why) {
  ssize_t n;
  if (d.spliced()) {
    n = ::splice(d.pipe_r.get(), nullptr, d.to, nullptr, d.in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
  } else {
    n = ::send(d.to, d.buf.data() + d.start, d.end - d.start, MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  if (n < 0) {
    if (errno == EINTR || errno == EAGAIN) return Step::kBlocked;
    *why = "connection reset";
    return Step::kFailed;
  }
  if (d.spliced()) d.in_pipe -= static_cast<size_t>(n);
  else d.start += static_cast<size_t>(n);
  return Step::kMoved;
}

// Moves `d` on until it would wait. Returns the poll events it waits for on its fds (0: nothing to
// wait for, it is done or has its turn again at once: `*again`), or -1 on failure.
short Pump(Direction& d, const RelayLimits& l, int stop_fd, std::string* why, bool* again) {
  for (int round = 0; round < kRoundsPerTurn; ++round) {
    if (d.done()) return 0;
    if (d.pending()) {
      Step s = Drain(d, why);
      if (s == Step::kFailed) return -1;
      if (s == Step::kBlocked) return POLLOUT;
      continue;
    }
    if (d.eof) {
      ::shutdown(d.to, SHUT_WR);  // pass the half-close on
      d.shut = true;
      return 0;
    }
    Step s = Fill(d, l, stop_fd, why);
    if (s == Step::kFailed) return -1;
    if (s == Step::kBlocked) return POLLIN;
  }
  *again = true;
  return 0;
}

}  // namespace

bool RelayLimits::Charge(uint64_t n, std::string* why) const {
  if (bytes_used && max_bytes && bytes_used->fetch_add(n) + n > max_bytes) {
    *why = "byte limit per execution (" + std::to_string(max_bytes) + " bytes) reached";
    return false;
  }
  return true;
}

RelayResult Relay(int client, int upstream, const RelayLimits& limits, const Waits& w) {
  Direction up{client, upstream}, down{upstream, client};
  down.mask = limits.mask_down;
  up.Open();
  down.Open();
  RelayResult r;
  const int idle_ms = static_cast<int>(std::min<uint64_t>(limits.idle_timeout_ms, 1u << 30));
  // Over once the upstream's side is done (it closed and the program has every byte): an HTTP
  // upstream closes after its answer (Connection: close), a TLS server after close_notify.
  // Each direction moves as far as it can before the thread waits, so a steady stream costs its
  // splices and no poll per chunk.
  while (!down.done()) {
    pollfd p[3];
    int n = 0;
    bool again = false, failed = false;
    for (Direction* d : {&up, &down}) {
      short want = Pump(*d, limits, w.stop_fd, &r.ended, &again);
      if (want < 0) {
        failed = true;
        break;
      }
      if (want == POLLOUT) p[n++] = {d->to, POLLOUT, 0};
      else if (want == POLLIN) p[n++] = {d->from, POLLIN, 0};
    }
    if (failed || down.done()) break;
    p[n++] = {w.stop_fd, POLLIN, 0};
    int rc = ::poll(p, static_cast<nfds_t>(n), again ? 0 : idle_ms);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) {
      r.ended = "poll failed";
      break;
    }
    if (rc == 0 && !again) {
      r.ended = "idle timeout (" + std::to_string(limits.idle_timeout_ms) + " ms)";
      break;
    }
    if (p[n - 1].revents & POLLIN) {
      r.ended = "the proxy stopped";
      break;
    }
  }
  r.up = up.total;
  r.down = down.total;
  return r;
}

}  // namespace lsb::egress
