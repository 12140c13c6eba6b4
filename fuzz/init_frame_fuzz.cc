// libFuzzer target: the init protocol decoder as init and the host use it. Bytes are fed in
// slices (the first byte picks the slice size) to exercise partial headers; each whole frame's
// JSON payload is decoded as the message its type announces (docs/protocol.md).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "protocol/frame.h"
#include "protocol/messages.h"

namespace {

using lsb::protocol::FrameType;

template <typename T>
void Decode(const std::string& payload) {
  // What both ends do: parse, convert with defaults; a bad message is an exception they catch.
  try {
    T v = lsb::protocol::ParseMessage<T>(payload);
    nlohmann::json round = v;  // and what they send back must serialize
    (void)round.dump();
  } catch (const std::exception&) {
  }
}

void DecodePayload(const lsb::protocol::Frame& f) {
  switch (f.type) {
    case FrameType::kSetup: Decode<lsb::protocol::BoxSetup>(f.payload); break;
    case FrameType::kRun: Decode<lsb::protocol::RunSpec>(f.payload); break;
    case FrameType::kReady: Decode<lsb::protocol::InitReady>(f.payload); break;
    case FrameType::kEvent: Decode<lsb::protocol::Event>(f.payload); break;
    case FrameType::kExit: Decode<lsb::protocol::ExitReport>(f.payload); break;
    case FrameType::kError: Decode<lsb::protocol::InitError>(f.payload); break;
    default: break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t slice = 1 + data[0] % 64;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  lsb::protocol::FrameDecoder dec;
  size_t fed = 0;
  while (fed < in.size()) {
    size_t n = std::min(slice, in.size() - fed);
    dec.Feed(in.substr(fed, n));
    fed += n;
    for (;;) {
      auto f = dec.Next();
      if (!f.ok()) return 0;  // malformed stream: refused, the decoder is done
      if (!*f) break;
      if ((*f)->payload.size() > lsb::protocol::kMaxFramePayload) __builtin_trap();
      // What was decoded re-encodes to the same bytes' length.
      if (lsb::protocol::EncodeFrame((*f)->type, (*f)->payload).size() !=
          lsb::protocol::kFrameHeaderSize + (*f)->payload.size())
        __builtin_trap();
      DecodePayload(**f);
    }
  }
  return 0;
}
