#include "runtime/frame_channel.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace lsb {

FrameChannel::FrameChannel(int fd) : fd_(fd) {
  int fl = ::fcntl(fd_, F_GETFL);
  if (fl >= 0) ::fcntl(fd_, F_SETFL, fl | O_NONBLOCK);
}

void FrameChannel::Queue(protocol::FrameType type, std::string_view payload) {
  if (write_closed_) return;
  out_ += protocol::EncodeFrame(type, payload);
}

void FrameChannel::QueueChunked(protocol::FrameType type, std::string_view data, size_t chunk) {
  if (chunk == 0 || chunk > protocol::kMaxFramePayload) chunk = protocol::kMaxFramePayload;
  // Sized once: appending a large message frame by frame doubled the buffer, holding up to 3x the
  // message at the last reallocation (issue 32, class 8).
  if (!write_closed_) out_.reserve(out_.size() + data.size() + (data.size() / chunk + 1) * protocol::kFrameHeaderSize);
  for (size_t off = 0; off < data.size(); off += chunk) Queue(type, data.substr(off, chunk));
}

Status FrameChannel::WriteSome() {
  while (out_pos_ < out_.size()) {
    const char* p = out_.data() + out_pos_;
    size_t n = out_.size() - out_pos_;
    // MSG_NOSIGNAL: a dead peer must be an error value, never SIGPIPE for the whole host process.
    ssize_t w = ::send(fd_, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0 && errno == ENOTSOCK) w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EPIPE || errno == ECONNRESET) {
        write_closed_ = true;
        out_.clear();
        out_pos_ = 0;
        return OkStatus();
      }
      return Error::FromErrno("write to the box's stream");
    }
    out_pos_ += static_cast<size_t>(w);
  }
  if (out_pos_ == out_.size()) {
    // A large message (a fork's or resume's files, an upload) must not keep its buffer for the
    // session's life: 8 forked children each kept ~64-128 MiB here (issue 32, class 8).
    if (out_.capacity() > (1u << 20)) std::string().swap(out_);
    out_.clear();
    out_pos_ = 0;
  } else if (out_pos_ > (1 << 20)) {
    out_.erase(0, out_pos_);
    out_pos_ = 0;
  }
  return OkStatus();
}

static int MillisUntil(FrameChannel::Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - FrameChannel::Clock::now()).count();
  if (left <= 0) return 0;
  return left > 1000000 ? 1000000 : static_cast<int>(left);
}

void FrameChannel::Hold(protocol::Frame frame) {
  // The run's end is always kept (one frame); output and events within the bound.
  const bool end = frame.type == protocol::FrameType::kExit || frame.type == protocol::FrameType::kError;
  if (!end && held_bytes_ + frame.payload.size() > kMaxHeldBytes) {
    dropped_held_ += frame.payload.size();
    return;
  }
  held_bytes_ += frame.payload.size();
  held_.push_back(std::move(frame));
}

Result<std::optional<protocol::Frame>> FrameChannel::Next(Clock::time_point deadline) {
  if (!held_.empty()) {
    protocol::Frame f = std::move(held_.front());
    held_.pop_front();
    held_bytes_ -= std::min(held_bytes_, f.payload.size());
    return std::optional<protocol::Frame>{std::move(f)};
  }
  for (;;) {
    auto f = decoder_.Next();
    if (!f.ok()) return f.error();
    if (*f) return std::move(*f);
    LSB_TRY(WriteSome());
    struct pollfd fds[2] = {{fd_, POLLIN, 0}, {cancel_fd_, POLLIN, 0}};
    struct pollfd& pfd = fds[0];
    if (!out_.empty()) pfd.events |= POLLOUT;
    int timeout = MillisUntil(deadline);
    int r = ::poll(fds, cancel_fd_ >= 0 ? 2 : 1, timeout);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno("poll the box's stream");
    }
    if (r == 0) {
      if (Clock::now() >= deadline) return std::optional<protocol::Frame>{};
      continue;
    }
    if (cancel_fd_ >= 0 && fds[1].revents) return Error::Cancelled();
    if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[64 << 10];
      ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n > 0) {
        decoder_.Feed(std::string_view(buf, static_cast<size_t>(n)));
      } else if (n == 0) {
        if (decoder_.buffered() > 0) return Error{"protocol: stream ended inside a frame"};
        return Error::Eof();
      } else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
        if (errno == ECONNRESET) return Error::Eof();
        return Error::FromErrno("read from the box's stream");
      }
    }
  }
}

Status FrameChannel::Flush(Clock::time_point deadline) {
  while (!out_.empty() && !write_closed_) {
    LSB_TRY(WriteSome());
    if (out_.empty() || write_closed_) break;
    struct pollfd pfd {fd_, POLLOUT, 0};
    int r = ::poll(&pfd, 1, MillisUntil(deadline));
    if (r < 0 && errno != EINTR) return Error::FromErrno("poll the box's stream");
    if (r == 0 && Clock::now() >= deadline) return Error{"timed out writing to the box's stream"};
  }
  return OkStatus();
}

}  // namespace lsb
