// The program's output, forwarded in whole lines: a program that writes one printed line
// in pieces (Python's unbuffered print writes "line", " ", "0", "\n") would otherwise reach a
// streaming client as one event per write. Bytes of one pipe are held until a newline, until
// kMaxChunk (64 KiB) of them wait, or until the pipe has been quiet for kQuietMs: a prompt without
// a newline still shows within milliseconds. While the writer is runnable (on a busy machine it
// may wait for a CPU between the pieces of one line) only kMaxHoldMs after the first held byte
// counts.
//
// Order is kept: output of the other pipe, an alert or the end of the run first sends what is held
// (Flush), so an event raised after a line was printed follows that line. Chunks are cut at a
// newline or, for a line longer than a chunk, at a UTF-8 character boundary when there is one, so
// a chunk of text is valid text on its own.
//
// Memory: at most kMaxChunk bytes are held. Not thread-safe: one run, one owner.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/frame.h"

namespace lsb::init {

class OutputCoalescer {
 public:
  static constexpr size_t kMaxChunk = 64 * 1024;
  static constexpr uint64_t kQuietMs = 10;
  static constexpr uint64_t kMaxHoldMs = 100;

  // `sink` gets each chunk (type kStdout or kStderr, never empty).
  using Sink = std::function<void(protocol::FrameType, std::string_view)>;
  explicit OutputCoalescer(Sink sink) : sink_(std::move(sink)) {}

  // Bytes the program wrote to `type`'s pipe, read at `now_ms`.
  void Add(protocol::FrameType type, std::string_view data, uint64_t now_ms);
  // Sends what is held (before an alert, at the end of the run).
  void Flush();
  // Sends the held tail once its time has come; `writer_busy`: the program is runnable, so more
  // of the line may be on its way (only kMaxHoldMs counts then).
  void FlushIfDue(uint64_t now_ms, bool writer_busy = false);
  // When the held tail is due (monotonic ms), or nullopt when nothing is held.
  std::optional<uint64_t> due_ms(bool writer_busy = false) const;
  size_t held() const { return buf_.size(); }

 private:
  // Sends the complete lines of buf_, and chunk-sized pieces of a longer line.
  void SendComplete();
  void Send(size_t n);

  Sink sink_;
  protocol::FrameType type_ = protocol::FrameType::kStdout;
  std::string buf_;
  uint64_t first_ms_ = 0, last_ms_ = 0;
};

}  // namespace lsb::init
