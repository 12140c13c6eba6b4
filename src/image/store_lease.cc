#include "image/store_lease.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/sha256.h"

namespace lsb::image {
namespace {

constexpr size_t kMaxChainFileBytes = 256 * 65;  // 256 lines of 64 hex + newline: twice protocol::kMaxImageLayers

bool IsHex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// "<root>/layers/sha256/<hex>" -> root and hex; false for any other shape.
bool SplitStoreLayer(const std::string& dir, std::string* root, std::string* hex) {
  constexpr std::string_view kMid = "/layers/sha256/";
  size_t at = dir.rfind(kMid);
  if (at == std::string::npos || at == 0) return false;
  *hex = dir.substr(at + kMid.size());
  *root = dir.substr(0, at);
  return IsHex64(*hex);
}

std::string ChainText(const std::vector<std::string>& hexes) {
  std::string text;
  for (const auto& h : hexes) text += h + "\n";
  return text;
}

Result<std::string> ReadSmall(int fd) {
  std::string out(kMaxChainFileBytes + 1, '\0');
  ssize_t n = ::pread(fd, out.data(), out.size(), 0);
  if (n < 0) return Error::FromErrno("read an in-use mark");
  out.resize(static_cast<size_t>(n));
  return out;
}

}  // namespace

std::string LayerChainId(const std::vector<std::string>& diff_hexes) {
  return Hex(Sha256(ChainText(diff_hexes)));
}

Result<ImageLease> ImageLease::Take(const std::vector<std::string>& layer_dirs) {
  std::string root, hex;
  std::vector<std::string> hexes;
  for (const auto& d : layer_dirs) {
    std::string r;
    if (!SplitStoreLayer(d, &r, &hex) || (!root.empty() && r != root)) return ImageLease();  // not one store's
    root = r;
    hexes.push_back(hex);
  }
  if (root.empty()) return ImageLease();
  std::string dir = root + "/" + kInUseDir;
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST && errno != EACCES)
    return Error::FromErrno("mark the image in use: mkdir " + dir);
  ImageLease lease;
  lease.chain_ = LayerChainId(hexes);
  const std::string path = dir + "/" + lease.chain_;
  const std::string text = ChainText(hexes);
  for (int attempt = 0; attempt < 100; ++attempt) {
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
    if (!fd && errno == EACCES) fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));  // not our store
    if (!fd) return Error::FromErrno("mark the image in use: open " + path);
    // The layer list goes in before the lock is taken: a held mark always names its layers.
    struct stat st {};
    if (::fstat(fd.get(), &st) == 0 && st.st_size == 0) (void)::pwrite(fd.get(), text.data(), text.size(), 0);
    if (::flock(fd.get(), LOCK_SH) != 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno("mark the image in use: lock " + path);
    }
    // The store removes unheld marks (holding them exclusively): ours must still be the file there.
    struct stat held {}, now {};
    if (::fstat(fd.get(), &held) != 0 || ::stat(path.c_str(), &now) != 0 || held.st_ino != now.st_ino ||
        held.st_dev != now.st_dev)
      continue;
    lease.fd_ = std::move(fd);
    return lease;
  }
  return Error{"mark the image in use: " + path + " keeps being replaced"};
}

Result<std::map<std::string, std::vector<std::string>>> HeldChains(int inuse_dir_fd) {
  std::map<std::string, std::vector<std::string>> held;
  UniqueFd dup(::fcntl(inuse_dir_fd, F_DUPFD_CLOEXEC, 0));
  if (!dup) return Error::FromErrno("dup");
  DIR* d = ::fdopendir(dup.release());
  if (!d) return Error::FromErrno("opendir " + std::string(kInUseDir));
  ::rewinddir(d);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d))
    if (IsHex64(e->d_name)) names.push_back(e->d_name);
  ::closedir(d);
  for (const auto& n : names) {
    UniqueFd fd(::openat(inuse_dir_fd, n.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) continue;  // gone meanwhile
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) {
      (void)::unlinkat(inuse_dir_fd, n.c_str(), 0);  // while locked: a box taking it now retries
      continue;
    }
    if (errno != EWOULDBLOCK) return Error::FromErrno("lock " + std::string(kInUseDir) + "/" + n);
    LSB_ASSIGN_OR_RETURN(std::string text, ReadSmall(fd.get()));
    std::vector<std::string> hexes;
    for (size_t at = 0; at < text.size();) {
      size_t nl = text.find('\n', at);
      if (nl == std::string::npos) break;
      std::string h = text.substr(at, nl - at);
      if (IsHex64(h)) hexes.push_back(h);
      at = nl + 1;
    }
    held[n] = std::move(hexes);
  }
  return held;
}

}  // namespace lsb::image
