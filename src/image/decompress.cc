#include "image/decompress.h"

#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <vector>

namespace lsb::image {
namespace {

constexpr size_t kInBuf = 256 << 10;

class PlainSource : public ByteSource {
 public:
  explicit PlainSource(ByteSource& raw) : raw_(raw) {}
  Result<size_t> Read(char* buf, size_t n) override { return raw_.Read(buf, n); }

 private:
  ByteSource& raw_;
};

class GzipSource : public ByteSource {
 public:
  explicit GzipSource(ByteSource& raw) : raw_(raw), in_(kInBuf) {
    std::memset(&z_, 0, sizeof z_);
    ok_ = inflateInit2(&z_, 15 + 16) == Z_OK;  // gzip wrapper only
  }
  ~GzipSource() override {
    if (ok_) inflateEnd(&z_);
  }
  Result<size_t> Read(char* buf, size_t n) override {
    if (!ok_) return Error{"gzip: inflateInit failed"};
    const uInt cap = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    z_.next_out = reinterpret_cast<Bytef*>(buf);
    z_.avail_out = cap;
    while (z_.avail_out == cap) {
      if (ended_) {
        // Another gzip member may follow (concatenated gzip is one stream, as gunzip reads it).
        LSB_TRY(Refill());
        if (z_.avail_in == 0) return 0;
        if (inflateReset(&z_) != Z_OK) return Error{"gzip: inflateReset failed"};
        ended_ = false;
      }
      LSB_TRY(Refill());
      if (z_.avail_in == 0) return Error{ErrorCode::kInvalidArgument, "truncated gzip stream"};
      int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        ended_ = true;
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return Error{ErrorCode::kInvalidArgument,
                     std::string("corrupt gzip stream: ") + (z_.msg ? z_.msg : "inflate error")};
      }
    }
    return static_cast<size_t>(cap - z_.avail_out);
  }

 private:
  Status Refill() {
    if (z_.avail_in > 0 || eof_) return OkStatus();
    LSB_ASSIGN_OR_RETURN(size_t r, raw_.Read(in_.data(), in_.size()));
    if (r == 0) eof_ = true;
    z_.next_in = reinterpret_cast<Bytef*>(in_.data());
    z_.avail_in = static_cast<uInt>(r);
    return OkStatus();
  }

  ByteSource& raw_;
  std::vector<char> in_;
  z_stream z_;
  bool ok_ = false;
  bool eof_ = false;
  bool ended_ = false;
};

class ZstdSource : public ByteSource {
 public:
  explicit ZstdSource(ByteSource& raw) : raw_(raw), in_(kInBuf), ctx_(ZSTD_createDStream()) {
    if (ctx_) ZSTD_initDStream(ctx_);
    // A frame may ask for a window of up to 2^31: cap it so a header cannot reserve gigabytes.
    if (ctx_) ZSTD_DCtx_setParameter(ctx_, ZSTD_d_windowLogMax, 27);
  }
  ~ZstdSource() override { ZSTD_freeDStream(ctx_); }
  Result<size_t> Read(char* buf, size_t n) override {
    if (!ctx_) return Error{"zstd: cannot allocate a decompression context"};
    ZSTD_outBuffer out{buf, n, 0};
    while (out.pos == 0) {
      if (input_.pos == input_.size && !eof_) {
        LSB_ASSIGN_OR_RETURN(size_t r, raw_.Read(in_.data(), in_.size()));
        if (r == 0) eof_ = true;
        input_ = ZSTD_inBuffer{in_.data(), r, 0};
      }
      if (input_.pos == input_.size && eof_) {
        if (!frame_done_) return Error{ErrorCode::kInvalidArgument, "truncated zstd stream"};
        return 0;
      }
      size_t rc = ZSTD_decompressStream(ctx_, &out, &input_);
      if (ZSTD_isError(rc))
        return Error{ErrorCode::kInvalidArgument, std::string("corrupt zstd stream: ") + ZSTD_getErrorName(rc)};
      frame_done_ = rc == 0;
    }
    return out.pos;
  }

 private:
  ByteSource& raw_;
  std::vector<char> in_;
  ZSTD_DStream* ctx_;
  ZSTD_inBuffer input_{nullptr, 0, 0};
  bool eof_ = false;
  bool frame_done_ = true;
};

}  // namespace

const char* CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone: return "none";
    case Compression::kGzip: return "gzip";
    case Compression::kZstd: return "zstd";
  }
  return "none";
}

Result<Compression> SniffCompression(int fd) {
  unsigned char magic[4] = {};
  ssize_t r;
  do r = ::pread(fd, magic, sizeof magic, 0);
  while (r < 0 && errno == EINTR);
  if (r < 0) return Error::FromErrno("read layer");
  if (r >= 2 && magic[0] == 0x1f && magic[1] == 0x8b) return Compression::kGzip;
  if (r >= 4 && magic[0] == 0x28 && magic[1] == 0xb5 && magic[2] == 0x2f && magic[3] == 0xfd) return Compression::kZstd;
  return Compression::kNone;
}

std::unique_ptr<ByteSource> Decompressor(Compression c, ByteSource& raw) {
  switch (c) {
    case Compression::kGzip: return std::make_unique<GzipSource>(raw);
    case Compression::kZstd: return std::make_unique<ZstdSource>(raw);
    case Compression::kNone: break;
  }
  return std::make_unique<PlainSource>(raw);
}

}  // namespace lsb::image
