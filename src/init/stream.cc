#include "init/stream.h"

#include <poll.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace lsb::init {

using protocol::Frame;
using protocol::FrameType;

Result<bool> Stream::Pump() {
  static char buf[64 * 1024];
  for (;;) {
    ssize_t n = ::read(in_, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return true;
      return Error::FromErrno("read control stream");
    }
    if (n == 0) {
      eof_ = true;
      return false;
    }
    dec_.Feed(std::string_view(buf, static_cast<size_t>(n)));
    return true;
  }
}

Result<std::optional<Frame>> Stream::Next() {
  auto r = dec_.Next();
  // Give the decoder's memory back once everything is consumed: PID 1 stays small when idle.
  if (r.ok() && r->has_value() && dec_.buffered() == 0) dec_ = protocol::FrameDecoder{};
  return r;
}

Result<Frame> Stream::Read() {
  for (;;) {
    LSB_ASSIGN_OR_RETURN(auto f, Next());
    if (f) return std::move(*f);
    if (eof_) return Error{"eof"};
    pollfd p{in_, POLLIN, 0};
    if (::poll(&p, 1, -1) < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno("poll control stream");
    }
    LSB_ASSIGN_OR_RETURN(bool more, Pump());
    if (!more && dec_.buffered() > 0) return Error{"protocol: stream ended inside a frame"};
    if (!more) return Error{"eof"};
  }
}

bool Stream::QuietFor(int ms) {
  if (eof_ || dec_.buffered() > 0) return false;
  pollfd p{in_, POLLIN, 0};
  int n;
  do n = ::poll(&p, 1, ms); while (n < 0 && errno == EINTR);
  return n == 0;
}

Status Stream::Send(FrameType type, std::string_view payload) {
  do {
    std::string_view chunk = payload.substr(0, std::min(payload.size(), kMaxDataChunk));
    bool data = type == FrameType::kStdout || type == FrameType::kStderr;
    if (!data) chunk = payload;
    if (chunk.size() > protocol::kMaxFramePayload) return Error{"protocol: control message too large"};
    unsigned char hdr[protocol::kFrameHeaderSize];
    auto n = static_cast<uint32_t>(chunk.size());
    hdr[0] = n & 0xff;
    hdr[1] = (n >> 8) & 0xff;
    hdr[2] = (n >> 16) & 0xff;
    hdr[3] = (n >> 24) & 0xff;
    hdr[4] = static_cast<unsigned char>(type);
    iovec iov[2] = {{hdr, sizeof hdr}, {const_cast<char*>(chunk.data()), chunk.size()}};
    size_t total = sizeof hdr + chunk.size();
    size_t done = 0;
    while (done < total) {
      // Advance the iovecs past what was written.
      iovec cur[2];
      int cnt = 0;
      size_t skip = done;
      for (auto& v : iov) {
        if (skip >= v.iov_len) {
          skip -= v.iov_len;
          continue;
        }
        cur[cnt++] = {static_cast<char*>(v.iov_base) + skip, v.iov_len - skip};
        skip = 0;
      }
      ssize_t w = ::writev(out_, cur, cnt);
      if (w < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN) {
          pollfd p{out_, POLLOUT, 0};
          ::poll(&p, 1, -1);
          continue;
        }
        return Error::FromErrno("write control stream");
      }
      done += static_cast<size_t>(w);
    }
    payload.remove_prefix(chunk.size());
  } while (!payload.empty());
  return OkStatus();
}

}  // namespace lsb::init
