// init's end of the byte stream: frames in on fd 0, frames out on fd 1 (the two may be one socket).
// Nothing but whole frames is ever written to the output fd.
//
// Output never blocks (docs/security.md, class 5): frames are queued and written as the host takes them
// (the output fd is non-blocking), so the run loop, and with it the wall-clock timer, keeps going
// while a host, a Docker attach or an HTTP client behind them does not read. The queue is bounded:
// past kOutputHighWater the run loop stops reading the program's pipes (the program then blocks on
// its own writes: backpressure, no loss); events past kOutBufferLimit are refused (Offer returns
// false and the caller counts them); control frames (kReady, kExit, kError, the run's own timeout
// and output alerts) are always queued: there are a handful per run.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "protocol/frame.h"

namespace lsb::init {

inline constexpr size_t kMaxDataChunk = 64 * 1024;
inline constexpr size_t kOutputHighWater = 256 * 1024;  // stop reading the program's output
inline constexpr size_t kOutBufferLimit = 1024 * 1024;  // refuse events beyond this

// A second source init serves while it waits on the host (the file watcher, file_watch.h): its
// fd is polled with the stream's, and OnReadable queues what it has as frames.
class SideInput {
 public:
  virtual ~SideInput() = default;
  virtual int fd() const = 0;  // -1: nothing to poll now
  virtual void OnReadable() = 0;
};

class Stream {
 public:
  // Switches `out_fd` to non-blocking mode.
  Stream(int in_fd, int out_fd);

  int in_fd() const { return in_; }
  int out_fd() const { return out_; }

  // Reads what is available on the input fd (one read) into the decoder. Returns false at EOF.
  Result<bool> Pump();
  // A complete frame, if one is buffered. Errors mean the peer is broken: stop.
  Result<std::optional<protocol::Frame>> Next();
  // Blocks until a frame arrives, writing queued output meanwhile. Error::Eof() at a clean end of
  // the stream.
  Result<protocol::Frame> Read();
  // True when no byte is buffered either way and none arrives within `ms`: the host has nothing
  // for us now.
  bool QuietFor(int ms);

  // Queues one frame, whatever the queue holds, and writes what the host takes now; data frames
  // larger than 64 KiB are split. An error only when the stream is broken.
  Status Send(protocol::FrameType type, std::string_view payload);
  template <typename T>
  Status SendJson(protocol::FrameType type, const T& msg) {
    return Send(type, nlohmann::json(msg).dump());
  }
  // Queues one frame only while the queue holds less than kOutBufferLimit; false when refused.
  bool Offer(protocol::FrameType type, std::string_view payload);
  template <typename T>
  bool OfferJson(protocol::FrameType type, const T& msg) {
    return Offer(type, nlohmann::json(msg).dump());
  }

  // Writes what the host takes now (never waits). An error when the stream is broken.
  Status Flush();
  // Waits up to `ms` for the queue to drain (on the way out of init); false if it did not.
  bool Drain(int ms);
  size_t pending() const { return out_buf_.size() - out_pos_; }
  // The side input Read() and QuietFor() serve too (nullptr: none); the run loop polls it itself.
  void SetSide(SideInput* side) { side_ = side; }
  SideInput* side() const { return side_; }
  bool output_paused() const { return pending() >= kOutputHighWater; }
  bool broken() const { return broken_; }

 private:
  void Enqueue(protocol::FrameType type, std::string_view payload);

  int in_;
  int out_;
  bool eof_ = false;
  bool broken_ = false;
  protocol::FrameDecoder dec_;
  std::string out_buf_;
  size_t out_pos_ = 0;
  SideInput* side_ = nullptr;
};

}  // namespace lsb::init
