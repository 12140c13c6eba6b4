// The byte stream between a host and llm-sandbox-init (docs/protocol.md).
//
// Every message is a frame: a 5-byte header (payload length, u32 little-endian; frame type, u8)
// followed by the payload. Control payloads are JSON objects; data payloads (code, stdin, stdout,
// stderr) are raw bytes, so the stream is binary-safe. The same bytes travel over a socketpair
// (native backend) or a Docker attach connection (docker backend).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace lsb::protocol {

enum class FrameType : uint8_t {
  // host -> init
  kSetup = 1,      // JSON BoxSetup: build the inner view (once per box)
  kRun = 2,        // JSON RunSpec: start a program (after kSetup; again for sessions)
  kCode = 3,       // raw: the program text, written to RunSpec.file_name; follows kRun
  kStdin = 4,      // raw: bytes for the program's stdin
  kStdinEof = 5,   // empty: close the program's stdin
  kKill = 6,       // empty: kill the running program (status "killed")
  kShutdown = 7,   // empty: kill everything and exit
  kPreempt = 8,    // empty: SIGUSR2 to the running program's first process (a session's zygote
                   // ends its episode as a reset: docs/protocol.md); ignored between runs
  kFileOp = 9,     // JSON FileOp: a file operation carried out by init's file worker (file_ops.h)
  kFileData = 10,  // raw: the op's input (FileOp.data_bytes in all), right behind kFileOp
  kWatch = 11,     // JSON WatchSpec: report file events under a directory (file_ops.h); replaces a watch
  kUnwatch = 12,   // empty: stop the watch
  // init -> host
  kReady = 64,     // JSON InitReady: the view is built, waiting for kRun
  kStdout = 65,    // raw chunk of the program's stdout
  kStderr = 66,    // raw chunk of the program's stderr
  kEvent = 67,     // JSON Event: an alert or a trace record
  kExit = 68,      // JSON ExitReport: the program ended; init waits for the next kRun
  kError = 69,     // JSON InitError: setup or run could not happen (fail closed)
  kFileChunk = 70, // raw: a piece of a file op's output (read: bytes; record ops: records)
  kFileReply = 71, // JSON FileReply: the file op is over
  kFileEvent = 72, // JSON FileEvent: something changed under the watched directory (any time)
};

const char* FrameTypeName(FrameType t);

inline constexpr size_t kFrameHeaderSize = 5;
inline constexpr uint32_t kMaxFramePayload = 1u << 20;  // 1 MiB; larger payloads are split or refused

struct Frame {
  FrameType type;
  std::string payload;
};

// Encodes one frame (header + payload). Payloads above kMaxFramePayload must be split by the caller.
std::string EncodeFrame(FrameType type, std::string_view payload);

// Incremental decoder: feed bytes as they arrive, pull whole frames out. Rejects unknown types and
// oversized lengths (the stream is then unusable: the peer is broken or hostile).
class FrameDecoder {
 public:
  void Feed(std::string_view bytes) { buf_.append(bytes); }
  // Returns a frame, std::nullopt when more bytes are needed, or an Error on a malformed stream.
  Result<std::optional<Frame>> Next();
  size_t buffered() const { return buf_.size() - pos_; }

 private:
  std::string buf_;
  size_t pos_ = 0;
};

// Blocking helpers on a file descriptor.
Status WriteFrame(int fd, FrameType type, std::string_view payload);
// Returns Error::Eof() (IsEof()) on a clean end of stream before a header.
Result<Frame> ReadFrame(int fd);

}  // namespace lsb::protocol
