// The image map of a long-lived backend, read for every box it starts: parsed again only when the
// file it comes from changes (another file chosen, or its inode, size or modification time), so
// a daemon refilling its pool does not parse YAML per box (~0.8 M instructions with yaml-cpp),
// while an operator's edit still reaches the next box. A rewrite that keeps the size within the
// file system's timestamp granularity (a few milliseconds) could go unnoticed until the next
// change. Errors are not kept: a broken file is read again next time. Thread-safe.
#pragma once

#include <sys/types.h>

#include <ctime>
#include <mutex>
#include <optional>
#include <string>

#include "base/result.h"
#include "runtime/image_map.h"

namespace lsb {

class ImageMapCache {
 public:
  explicit ImageMapCache(std::string explicit_file) : explicit_file_(std::move(explicit_file)) {}

  Result<ImageMap> Get() const;
  // How many times the file was parsed (for tests).
  size_t parses() const;

 private:
  struct Stamp {
    std::string file;
    dev_t device = 0;
    ino_t inode = 0;
    off_t size = 0;
    timespec modified{};
    bool operator==(const Stamp& o) const;
  };
  static std::optional<Stamp> StampOf(const std::string& file);

  std::string explicit_file_;
  mutable std::mutex mu_;
  mutable std::optional<Stamp> stamp_;
  mutable ImageMap map_;
  mutable size_t parses_ = 0;
};

}  // namespace lsb
