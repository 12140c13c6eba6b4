// Non-blocking frame I/O on a box's stream with deadlines: the runner writes stdin while it reads
// output, so neither side can block the other when a socket buffer fills.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "protocol/frame.h"

namespace lsb {

class FrameChannel {
 public:
  using Clock = std::chrono::steady_clock;

  // `fd` is not owned; it is switched to non-blocking mode.
  explicit FrameChannel(int fd);

  // Queues one frame (payload <= kMaxFramePayload); it is written by Next()/Flush().
  void Queue(protocol::FrameType type, std::string_view payload);
  // Queues `data` as frames of at most `chunk` bytes each.
  void QueueChunked(protocol::FrameType type, std::string_view data, size_t chunk = 64 << 10);

  // Writes queued bytes as the peer accepts them and returns the next frame received; std::nullopt
  // when `deadline` passes first; Error::Eof() (IsEof()) when the peer closed the stream, or a
  // protocol error.
  // If the peer stops reading (it died, or closed its end), queued output is dropped and reading
  // goes on, so the peer's last frames are still seen.
  Result<std::optional<protocol::Frame>> Next(Clock::time_point deadline);

  // Keeps `frame` for the next Next() calls, in order: a run's output that arrived while a file op
  // (runtime/box_files.h) read its answer. At most kMaxHeldBytes of payload are held; output past
  // and events past that are dropped (they would be past any execute's cap) and counted in
  // dropped_held(); a run's kExit or kError is always kept.
  void Hold(protocol::Frame frame);
  static constexpr size_t kMaxHeldBytes = 1u << 20;
  uint64_t dropped_held() const { return dropped_held_; }

  // Writes every queued byte (or fails at the deadline).
  Status Flush(Clock::time_point deadline);

  // When `fd` becomes readable, Next() returns Error::Cancelled() (a signal or a client gone).
  void set_cancel_fd(int fd) { cancel_fd_ = fd; }

 private:
  Status WriteSome();
  int fd_;
  std::string out_;
  size_t out_pos_ = 0;
  bool write_closed_ = false;
  int cancel_fd_ = -1;
  protocol::FrameDecoder decoder_;
  std::deque<protocol::Frame> held_;
  size_t held_bytes_ = 0;
  uint64_t dropped_held_ = 0;
};

}  // namespace lsb
