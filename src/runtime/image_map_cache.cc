#include "runtime/image_map_cache.h"

#include <sys/stat.h>

namespace lsb {

bool ImageMapCache::Stamp::operator==(const Stamp& o) const {
  return file == o.file && device == o.device && inode == o.inode && size == o.size &&
         modified.tv_sec == o.modified.tv_sec && modified.tv_nsec == o.modified.tv_nsec;
}

std::optional<ImageMapCache::Stamp> ImageMapCache::StampOf(const std::string& file) {
  Stamp s;
  s.file = file;
  if (file.empty()) return s;  // no file: the empty map, which never changes
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return std::nullopt;
  s.device = st.st_dev;
  s.inode = st.st_ino;
  s.size = st.st_size;
  s.modified = st.st_mtim;
  return s;
}

Result<ImageMap> ImageMapCache::Get() const {
  ImageMap::Choice choice = ImageMap::Choose(explicit_file_);
  std::optional<Stamp> now = StampOf(choice.file);
  std::lock_guard<std::mutex> lock(mu_);
  if (now && stamp_ && *now == *stamp_) return map_;
  // Stamped before reading: an edit during the read shows as a change next time.
  auto map = ImageMap::LoadChoice(choice);
  ++parses_;
  if (!map.ok() || !now) {
    stamp_.reset();
    return map;
  }
  stamp_ = now;
  map_ = *map;
  return map;
}

size_t ImageMapCache::parses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return parses_;
}

}  // namespace lsb
