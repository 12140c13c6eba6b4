#include "init/stream.h"

#include <fcntl.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace lsb::init {

using protocol::Frame;
using protocol::FrameType;

namespace {

int64_t NowMs() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace

Stream::Stream(int in_fd, int out_fd) : in_(in_fd), out_(out_fd) {
  int fl = ::fcntl(out_, F_GETFL);
  if (fl >= 0) ::fcntl(out_, F_SETFL, fl | O_NONBLOCK);
}

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
    if (eof_) return Error::Eof();
    pollfd p[3] = {{in_, POLLIN, 0}, {out_, POLLOUT, 0}, {-1, POLLIN, 0}};
    bool out = pending() > 0 && !broken_;
    nfds_t n = 1;
    if (out && out_ == in_) p[0].events |= POLLOUT;
    else if (out) n = 2;
    const int side = side_ ? side_->fd() : -1;
    if (side >= 0) p[n++] = {side, POLLIN, 0};
    if (::poll(p, n, -1) < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno("poll control stream");
    }
    if (side >= 0 && p[n - 1].revents) side_->OnReadable();
    if (out) (void)Flush();  // a broken output shows up as EOF on the input
    if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    LSB_ASSIGN_OR_RETURN(bool more, Pump());
    if (!more && dec_.buffered() > 0) return Error{"protocol: stream ended inside a frame"};
    if (!more) return Error::Eof();
  }
}

bool Stream::QuietFor(int ms) {
  if (eof_ || dec_.buffered() > 0 || pending() > 0) return false;
  pollfd p[2] = {{in_, POLLIN, 0}, {side_ ? side_->fd() : -1, POLLIN, 0}};
  int n;
  do n = ::poll(p, p[1].fd >= 0 ? 2 : 1, ms); while (n < 0 && errno == EINTR);
  if (n > 0 && p[1].fd >= 0 && p[1].revents) side_->OnReadable();  // served; not quiet
  return n == 0;
}

void Stream::Enqueue(FrameType type, std::string_view payload) {
  bool data = type == FrameType::kStdout || type == FrameType::kStderr;
  do {
    std::string_view chunk = data ? payload.substr(0, std::min(payload.size(), kMaxDataChunk)) : payload;
    // Compact what was written before growing the queue.
    if (out_pos_ > 0 && out_pos_ >= out_buf_.size() / 2) {
      out_buf_.erase(0, out_pos_);
      out_pos_ = 0;
    }
    out_buf_ += protocol::EncodeFrame(type, chunk);
    payload.remove_prefix(chunk.size());
  } while (!payload.empty());
}

Status Stream::Send(FrameType type, std::string_view payload) {
  bool data = type == FrameType::kStdout || type == FrameType::kStderr;
  if (!data && payload.size() > protocol::kMaxFramePayload) return Error{"protocol: control message too large"};
  if (broken_) return Error{"write control stream: broken"};
  Enqueue(type, payload);
  return Flush();
}

bool Stream::Offer(FrameType type, std::string_view payload) {
  if (broken_) return true;  // nobody reads any more: nothing to count
  if (pending() >= kOutBufferLimit || payload.size() > protocol::kMaxFramePayload) return false;
  Enqueue(type, payload);
  (void)Flush();
  return true;
}

Status Stream::Flush() {
  while (out_pos_ < out_buf_.size() && !broken_) {
    ssize_t w = ::write(out_, out_buf_.data() + out_pos_, out_buf_.size() - out_pos_);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return OkStatus();  // the host is not reading now: the rest waits
      broken_ = true;
      out_buf_.clear();
      out_pos_ = 0;
      return Error::FromErrno("write control stream");
    }
    out_pos_ += static_cast<size_t>(w);
  }
  if (broken_) return Error{"write control stream: broken"};
  if (out_pos_ == out_buf_.size()) {
    out_pos_ = 0;
    if (out_buf_.capacity() > 64 * 1024) std::string().swap(out_buf_);  // small again when idle
    else out_buf_.clear();
  }
  return OkStatus();
}

bool Stream::Drain(int ms) {
  const int64_t until = NowMs() + ms;
  while (pending() > 0 && !broken_) {
    int64_t left = until - NowMs();
    if (left <= 0) return false;
    pollfd p{out_, POLLOUT, 0};
    if (::poll(&p, 1, static_cast<int>(left)) < 0 && errno != EINTR) return false;
    if (!Flush().ok()) return false;
  }
  return pending() == 0;
}

}  // namespace lsb::init
