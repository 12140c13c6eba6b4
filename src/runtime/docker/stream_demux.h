// The attach stream of a container without a TTY multiplexes stdout and stderr: each frame is an
// 8-byte header {stream, 0, 0, 0, size as u32 big-endian} and `size` payload bytes. This decoder is
// incremental and does no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace lsb::docker {

enum class StdStream : uint8_t { kStdin = 0, kStdout = 1, kStderr = 2 };

struct MuxFrame {
  StdStream stream;
  std::string payload;
};

class StreamDemuxer {
 public:
  void Feed(std::string_view bytes) { buf_.append(bytes); }
  // A whole frame, std::nullopt when more bytes are needed, or an Error on a corrupt stream.
  Result<std::optional<MuxFrame>> Next();
  size_t buffered() const { return buf_.size() - pos_; }

 private:
  std::string buf_;
  size_t pos_ = 0;
};

// Encodes one frame (for tests and fakes).
std::string EncodeMuxFrame(StdStream stream, std::string_view payload);

}  // namespace lsb::docker
