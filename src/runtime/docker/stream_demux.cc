#include "runtime/docker/stream_demux.h"

namespace lsb::docker {

// The engine splits large writes itself; anything bigger than this is a corrupt stream.
constexpr uint32_t kMaxMuxPayload = 64u << 20;

Result<std::optional<MuxFrame>> StreamDemuxer::Next() {
  if (buf_.size() - pos_ < 8) {
    if (pos_ > 0) {  // compact between frames
      buf_.erase(0, pos_);
      pos_ = 0;
    }
    return std::optional<MuxFrame>();
  }
  const auto* h = reinterpret_cast<const unsigned char*>(buf_.data() + pos_);
  if (h[0] > 2 || h[1] || h[2] || h[3])
    return Error{"corrupt Docker attach stream: bad frame header (stream byte " + std::to_string(h[0]) + ")"};
  uint32_t size = (uint32_t{h[4]} << 24) | (uint32_t{h[5]} << 16) | (uint32_t{h[6]} << 8) | uint32_t{h[7]};
  if (size > kMaxMuxPayload) return Error{"corrupt Docker attach stream: frame of " + std::to_string(size) + " bytes"};
  if (buf_.size() - pos_ - 8 < size) return std::optional<MuxFrame>();
  MuxFrame f{static_cast<StdStream>(h[0]), buf_.substr(pos_ + 8, size)};
  pos_ += 8 + size;
  if (pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  }
  return std::optional<MuxFrame>(std::move(f));
}

std::string EncodeMuxFrame(StdStream stream, std::string_view payload) {
  std::string out(8, '\0');
  out[0] = static_cast<char>(stream);
  uint32_t n = static_cast<uint32_t>(payload.size());
  out[4] = static_cast<char>(n >> 24);
  out[5] = static_cast<char>(n >> 16);
  out[6] = static_cast<char>(n >> 8);
  out[7] = static_cast<char>(n);
  out.append(payload);
  return out;
}

}  // namespace lsb::docker
