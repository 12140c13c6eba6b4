#include "init/worker_io.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/io.h"
#include "protocol/frame.h"

namespace lsb::init {
namespace {
constexpr size_t kChunk = 64 * 1024;
}

bool InputReader::Fill() {
  if (pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  }
  char tmp[64 * 1024];
  for (;;) {
    ssize_t n = ::read(fd_, tmp, sizeof tmp);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }
}

ssize_t InputReader::Read(char* dst, size_t n) {
  if (pos_ == buf_.size() && !Fill()) return 0;
  size_t k = std::min(n, buf_.size() - pos_);
  std::copy_n(buf_.data() + pos_, k, dst);
  pos_ += k;
  return static_cast<ssize_t>(k);
}

bool InputReader::ReadLine(std::string& line, size_t max) {
  for (;;) {
    size_t nl = buf_.find('\n', pos_);
    if (nl != std::string::npos) {
      if (nl - pos_ > max) return false;
      line.assign(buf_, pos_, nl - pos_);
      pos_ = nl + 1;
      return true;
    }
    if (buf_.size() - pos_ > max || !Fill()) return false;
  }
}

bool InputReader::ReadExact(std::string& dst, size_t n) {
  dst.clear();
  while (dst.size() < n) {
    if (pos_ == buf_.size() && !Fill()) return false;
    size_t k = std::min(n - dst.size(), buf_.size() - pos_);
    dst.append(buf_, pos_, k);
    pos_ += k;
  }
  return true;
}

Status ReplyWriter::FlushChunk() {
  if (buf_.empty()) return OkStatus();
  std::string frame = protocol::EncodeFrame(protocol::FrameType::kFileChunk, buf_);
  buf_.clear();
  return WriteAll(fd_, frame);
}

Status ReplyWriter::Chunk(std::string_view bytes) {
  while (!bytes.empty()) {
    size_t n = std::min(bytes.size(), kChunk - buf_.size());
    buf_.append(bytes.substr(0, n));
    bytes.remove_prefix(n);
    if (buf_.size() >= kChunk) LSB_TRY(FlushChunk());
  }
  return OkStatus();
}

Status ReplyWriter::Record(char kind, std::string_view path, std::string_view data) {
  std::string head;
  head += kind;
  head += " " + std::to_string(path.size()) + " " + std::to_string(data.size()) + "\n";
  LSB_TRY(Chunk(head));
  LSB_TRY(Chunk(path));
  return Chunk(data);
}

Status ReplyWriter::Finish(const protocol::FileReply& reply) {
  LSB_TRY(FlushChunk());
  return WriteAll(fd_, protocol::EncodeFrame(protocol::FrameType::kFileReply, nlohmann::json(reply).dump()));
}

}  // namespace lsb::init
