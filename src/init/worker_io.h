// The file worker's two pipes (file_worker.h): its input (the op's kFileData bytes, which init
// copies in) read through a small buffer, and its way out, kFileChunk frames of at most 64 KiB then
// one kFileReply. Records (protocol/file_ops.h) are buffered into chunks.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "base/result.h"
#include "protocol/file_ops.h"

namespace lsb::init {

class InputReader {
 public:
  explicit InputReader(int fd) : fd_(fd) {}
  // Up to `n` bytes (what is buffered first); 0 at the end of the input, -1 on an error.
  ssize_t Read(char* dst, size_t n);
  // A line of at most `max` bytes without its "\n"; false at the end or past `max`.
  bool ReadLine(std::string& line, size_t max);
  // Exactly `n` bytes; false when the input ends first.
  bool ReadExact(std::string& dst, size_t n);

 private:
  bool Fill();
  int fd_;
  std::string buf_;
  size_t pos_ = 0;
};

class ReplyWriter {
 public:
  explicit ReplyWriter(int fd) : fd_(fd) {}
  // Bytes of the op's output (kRead's file, records); written in whole frames as they fill.
  Status Chunk(std::string_view bytes);
  // One record: "<kind> <npath> <ndata>\n" path data.
  Status Record(char kind, std::string_view path, std::string_view data);
  // What is buffered, then the reply.
  Status Finish(const protocol::FileReply& reply);

 private:
  Status FlushChunk();
  int fd_;
  std::string buf_;
};

}  // namespace lsb::init
