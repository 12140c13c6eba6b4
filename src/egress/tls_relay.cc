#include "egress/tls_relay.h"

#include <poll.h>

#include <cerrno>
#include <chrono>
#include <vector>

namespace lsb::egress {
namespace {

using Clock = std::chrono::steady_clock;

struct Side {
  TlsEnd* from;
  TlsEnd* to;
  StreamMask* mask;
  uint64_t total = 0;
  bool closed = false;
};

// Everything `s.from` has decrypted now goes to `s.to`, each read at most what the bandwidth cap
// grants. False (with `why`) when the relay must end badly; `s.closed` once the sender closed (its
// close passed on).
bool Pass(Side& s, const RelayLimits& l, int stop_fd, std::string* why) {
  std::vector<char> buf(16 << 10);
  auto deadline = Clock::now() + std::chrono::milliseconds(l.idle_timeout_ms);
  for (;;) {
    const size_t granted = AwaitGrant(l.rate, buf.size(), stop_fd);
    if (granted == 0) {
      *why = "the proxy stopped";
      return false;
    }
    auto got = s.from->TryRead(buf.data(), granted);
    if (l.rate) l.rate->Return(granted - (got.ok() ? *got : 0));
    if (!got.ok() && got.error().code == ErrorCode::kEof) {
      if (s.mask) (void)s.to->Write(s.mask->Flush(), deadline);
      s.to->Close(deadline);
      s.closed = true;
      return true;
    }
    if (!got.ok()) {
      *why = got.error().message;
      return false;
    }
    if (*got == 0) return true;
    const uint64_t n = *got;
    if (!l.Charge(n, why)) return false;
    s.total += n;
    std::string_view data(buf.data(), *got);
    std::string masked;
    if (s.mask) data = masked = s.mask->Feed(data);
    if (auto st = s.to->Write(data, deadline); !st.ok()) {
      *why = st.error().message;
      return false;
    }
  }
}

}  // namespace

RelayResult RelayTls(TlsEnd& client, TlsEnd& upstream, const RelayLimits& limits, const Waits& w) {
  Side up{&client, &upstream, nullptr}, down{&upstream, &client, limits.mask_down};
  RelayResult r;
  // What the ends decrypted already (the rest of a first read) goes first.
  bool ok = Pass(up, limits, w.stop_fd, &r.ended) && Pass(down, limits, w.stop_fd, &r.ended);
  while (ok && !down.closed) {
    pollfd p[3];
    int n = 0, ui = -1, di = -1;
    if (!up.closed) p[ui = n++] = {client.fd(), POLLIN, 0};
    p[di = n++] = {upstream.fd(), POLLIN, 0};
    p[n++] = {w.stop_fd, POLLIN, 0};
    int rc = ::poll(p, static_cast<nfds_t>(n), static_cast<int>(limits.idle_timeout_ms));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) {
      r.ended = rc == 0 ? "idle timeout (" + std::to_string(limits.idle_timeout_ms) + " ms)" : "poll failed";
      break;
    }
    if (p[n - 1].revents & POLLIN) {
      r.ended = "the proxy stopped";
      break;
    }
    for (auto [side, idx] : {std::pair{&up, ui}, std::pair{&down, di}}) {
      if (!ok || idx < 0 || !p[idx].revents) continue;
      if (auto st = side->from->Receive(); !st.ok()) {
        r.ended = st.error().message;
      }
      ok = Pass(*side, limits, w.stop_fd, &r.ended);
    }
  }
  r.up = up.total;
  r.down = down.total;
  return r;
}

}  // namespace lsb::egress
