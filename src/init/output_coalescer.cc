#include "init/output_coalescer.h"

#include <algorithm>

#include "base/utf8.h"

namespace lsb::init {

using protocol::FrameType;

void OutputCoalescer::Add(FrameType type, std::string_view data, uint64_t now_ms) {
  if (data.empty()) return;
  if (type != type_) Flush();  // the other pipe's bytes go first: they were written first
  type_ = type;
  if (buf_.empty()) first_ms_ = now_ms;
  last_ms_ = now_ms;
  while (!data.empty()) {
    size_t take = std::min(data.size(), kMaxChunk - buf_.size());
    buf_.append(data.data(), take);
    data.remove_prefix(take);
    SendComplete();
  }
}

void OutputCoalescer::SendComplete() {
  for (;;) {
    size_t window = std::min(buf_.size(), kMaxChunk);
    size_t nl = buf_.rfind('\n', window - 1);
    if (nl != std::string::npos) {
      Send(nl + 1);
    } else if (buf_.size() >= kMaxChunk) {
      Send(Utf8CutAt(buf_, kMaxChunk));
    } else {
      return;
    }
    if (buf_.empty()) return;
  }
}

void OutputCoalescer::Send(size_t n) {
  if (n == 0) return;
  sink_(type_, std::string_view(buf_).substr(0, n));
  buf_.erase(0, n);
}

void OutputCoalescer::Flush() {
  if (buf_.empty()) return;
  sink_(type_, buf_);
  buf_.clear();
  if (buf_.capacity() > 4096) std::string().swap(buf_);  // PID 1 stays small when idle
}

std::optional<uint64_t> OutputCoalescer::due_ms(bool writer_busy) const {
  if (buf_.empty()) return std::nullopt;
  if (writer_busy) return first_ms_ + kMaxHoldMs;
  return std::min(last_ms_ + kQuietMs, first_ms_ + kMaxHoldMs);
}

void OutputCoalescer::FlushIfDue(uint64_t now_ms, bool writer_busy) {
  auto due = due_ms(writer_busy);
  if (due && now_ms >= *due) Flush();
}

}  // namespace lsb::init
