// init's end of the byte stream: frames in on fd 0, frames out on fd 1 (the two may be one socket).
// Nothing but whole frames is ever written to the output fd.
#pragma once

#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "protocol/frame.h"

namespace lsb::init {

class Stream {
 public:
  Stream(int in_fd, int out_fd) : in_(in_fd), out_(out_fd) {}

  int in_fd() const { return in_; }

  // Reads what is available on the input fd (one read) into the decoder. Returns false at EOF.
  Result<bool> Pump();
  // A complete frame, if one is buffered. Errors mean the peer is broken: stop.
  Result<std::optional<protocol::Frame>> Next();
  // Blocks until a frame arrives. Error "eof" at a clean end of the stream.
  Result<protocol::Frame> Read();
  // True when no byte is buffered and none arrives within `ms`: the host has nothing for us now.
  bool QuietFor(int ms);

  // Writes one frame; data frames larger than 64 KiB are split.
  Status Send(protocol::FrameType type, std::string_view payload);
  template <typename T>
  Status SendJson(protocol::FrameType type, const T& msg) {
    return Send(type, nlohmann::json(msg).dump());
  }

 private:
  int in_;
  int out_;
  bool eof_ = false;
  protocol::FrameDecoder dec_;
};

inline constexpr size_t kMaxDataChunk = 64 * 1024;

}  // namespace lsb::init
