#include "protocol/frame.h"

#include "base/io.h"

namespace lsb::protocol {
namespace {

bool KnownType(uint8_t t) {
  return (t >= 1 && t <= 12) || (t >= 64 && t <= 72);
}

uint32_t DecodeLength(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint32_t>(u[0]) | static_cast<uint32_t>(u[1]) << 8 |
         static_cast<uint32_t>(u[2]) << 16 | static_cast<uint32_t>(u[3]) << 24;
}

}  // namespace

const char* FrameTypeName(FrameType t) {
  switch (t) {
    case FrameType::kSetup: return "setup";
    case FrameType::kRun: return "run";
    case FrameType::kCode: return "code";
    case FrameType::kStdin: return "stdin";
    case FrameType::kStdinEof: return "stdin_eof";
    case FrameType::kKill: return "kill";
    case FrameType::kShutdown: return "shutdown";
    case FrameType::kPreempt: return "preempt";
    case FrameType::kFileOp: return "file_op";
    case FrameType::kFileData: return "file_data";
    case FrameType::kWatch: return "watch";
    case FrameType::kUnwatch: return "unwatch";
    case FrameType::kReady: return "ready";
    case FrameType::kStdout: return "stdout";
    case FrameType::kStderr: return "stderr";
    case FrameType::kEvent: return "event";
    case FrameType::kExit: return "exit";
    case FrameType::kError: return "error";
    case FrameType::kFileChunk: return "file_chunk";
    case FrameType::kFileReply: return "file_reply";
    case FrameType::kFileEvent: return "file_event";
  }
  return "unknown";
}

std::string EncodeFrame(FrameType type, std::string_view payload) {
  std::string out;
  out.reserve(kFrameHeaderSize + payload.size());
  auto n = static_cast<uint32_t>(payload.size());
  out.push_back(static_cast<char>(n & 0xff));
  out.push_back(static_cast<char>((n >> 8) & 0xff));
  out.push_back(static_cast<char>((n >> 16) & 0xff));
  out.push_back(static_cast<char>((n >> 24) & 0xff));
  out.push_back(static_cast<char>(type));
  out.append(payload);
  return out;
}

Result<std::optional<Frame>> FrameDecoder::Next() {
  if (buffered() < kFrameHeaderSize) return std::optional<Frame>{};
  const char* h = buf_.data() + pos_;
  uint32_t len = DecodeLength(h);
  auto type = static_cast<uint8_t>(h[4]);
  if (!KnownType(type)) return Error{"protocol: unknown frame type " + std::to_string(type)};
  if (len > kMaxFramePayload)
    return Error{"protocol: frame of " + std::to_string(len) + " bytes exceeds the 1 MiB limit"};
  if (buffered() < kFrameHeaderSize + len) return std::optional<Frame>{};
  Frame f{static_cast<FrameType>(type), buf_.substr(pos_ + kFrameHeaderSize, len)};
  pos_ += kFrameHeaderSize + len;
  // Compact once the consumed prefix dominates, so the buffer does not grow without bound.
  if (pos_ > 65536 && pos_ * 2 > buf_.size()) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  return std::optional<Frame>{std::move(f)};
}

Status WriteFrame(int fd, FrameType type, std::string_view payload) {
  if (payload.size() > kMaxFramePayload) return Error{"protocol: payload too large for one frame"};
  return WriteAll(fd, EncodeFrame(type, payload));
}

Result<Frame> ReadFrame(int fd) {
  char header[kFrameHeaderSize];
  LSB_TRY(ReadExact(fd, header, sizeof header));
  uint32_t len = DecodeLength(header);
  auto type = static_cast<uint8_t>(header[4]);
  if (!KnownType(type)) return Error{"protocol: unknown frame type " + std::to_string(type)};
  if (len > kMaxFramePayload)
    return Error{"protocol: frame of " + std::to_string(len) + " bytes exceeds the 1 MiB limit"};
  Frame f{static_cast<FrameType>(type), std::string(len, '\0')};
  if (len > 0) {
    auto st = ReadExact(fd, f.payload.data(), len);
    if (!st.ok()) return Error{"protocol: stream ended inside a frame", st.error().sys_errno};
  }
  return f;
}

}  // namespace lsb::protocol
