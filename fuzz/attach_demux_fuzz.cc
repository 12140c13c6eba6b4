// libFuzzer target: the Docker attach stream demultiplexer (8-byte headers, big-endian sizes),
// fed in slices like a socket delivers it. Every frame it yields must re-encode to its own bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/docker/stream_demux.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t slice = 1 + data[0] % 64;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  lsb::docker::StreamDemuxer dm;
  std::string reencoded;
  size_t consumed = 0;
  size_t fed = 0;
  while (fed < in.size()) {
    size_t n = std::min(slice, in.size() - fed);
    dm.Feed(in.substr(fed, n));
    fed += n;
    for (;;) {
      auto f = dm.Next();
      if (!f.ok()) return 0;  // corrupt stream: refused
      if (!*f) break;
      std::string enc = lsb::docker::EncodeMuxFrame((*f)->stream, (*f)->payload);
      if (in.substr(consumed, enc.size()) != enc) __builtin_trap();
      consumed += enc.size();
    }
  }
  if (consumed + dm.buffered() != in.size()) __builtin_trap();  // no byte lost or invented
  return 0;
}
