#include "image/image_fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "image/safe_fs.h"

namespace lsb::image {
namespace {

constexpr int kMaxSymlinks = 40;  // as the kernel's MAXSYMLINKS

std::vector<std::string> Split(const std::string& path) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string::npos) slash = path.size();
    if (slash > pos) out.push_back(path.substr(pos, slash - pos));
    pos = slash + 1;
  }
  return out;
}

struct Found {
  struct stat st {};
  std::string layer;
  UniqueFd parent;
};

bool IsOpaque(int dir) {
  char v[4];
  ssize_t n = ::fgetxattr(dir, "user.overlay.opaque", v, sizeof v);
  return n == 1 && v[0] == 'y';
}

// The entry `name` in directory `dir` of the merged view: the topmost layer that has it.
Result<Found> Lookup(const std::vector<std::string>& layers, const std::vector<std::string>& dir, const std::string& name) {
  for (size_t i = layers.size(); i-- > 0;) {
    auto root = OpenDir(layers[i]);
    if (!root.ok()) continue;
    auto d = OpenDirBeneath(root->get(), dir, dir.size(), false);
    if (!d.ok()) continue;  // absent here (or a symlink/file in this layer: not a directory of the view)
    Found f;
    if (::fstatat(d->get(), name.c_str(), &f.st, AT_SYMLINK_NOFOLLOW) == 0) {
      if (S_ISCHR(f.st.st_mode) && f.st.st_rdev == 0) break;  // whiteout: deleted here
      f.layer = layers[i];
      f.parent = std::move(d).value();
      return f;
    }
    if (IsOpaque(d->get())) break;
  }
  return Error{ErrorCode::kNotFound, "not in the image"};
}

}  // namespace

Result<ImageFile> FindInImage(const std::vector<std::string>& layers, const std::string& path) {
  std::vector<std::string> todo = Split(path), cur;
  std::reverse(todo.begin(), todo.end());  // a stack: back() is the next component
  int hops = 0;
  while (!todo.empty()) {
    std::string c = todo.back();
    todo.pop_back();
    if (c == ".") continue;
    if (c == "..") {
      if (!cur.empty()) cur.pop_back();
      continue;
    }
    LSB_ASSIGN_OR_RETURN(Found f, Lookup(layers, cur, c));
    if (S_ISLNK(f.st.st_mode)) {
      if (++hops > kMaxSymlinks) return Error{ErrorCode::kNotFound, path + ": too many symlinks"};
      char buf[4096];
      ssize_t n = ::readlinkat(f.parent.get(), c.c_str(), buf, sizeof buf - 1);
      if (n < 0) return Error::FromErrno("readlink " + path);
      std::string target(buf, static_cast<size_t>(n));
      if (!target.empty() && target[0] == '/') cur.clear();  // absolute: from the image's root
      auto parts = Split(target);
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) todo.push_back(*it);
      continue;
    }
    if (S_ISDIR(f.st.st_mode)) {
      cur.push_back(c);
      continue;
    }
    if (!todo.empty() || !S_ISREG(f.st.st_mode)) return Error{ErrorCode::kNotFound, path + ": not a regular file"};
    ImageFile out;
    out.image_path = path;
    out.resolved = "/" + JoinPath(cur, cur.size()) + (cur.empty() ? "" : "/") + c;
    out.layer_dir = f.layer;
    out.executable = (f.st.st_mode & 0111) != 0;
    return out;
  }
  return Error{ErrorCode::kNotFound, path + ": a directory"};
}

Result<std::string> ReadImageFile(const std::vector<std::string>& layers, const std::string& path, size_t max_bytes) {
  LSB_ASSIGN_OR_RETURN(ImageFile f, FindInImage(layers, path));
  LSB_ASSIGN_OR_RETURN(UniqueFd root, OpenDir(f.layer_dir));
  auto comps = Split(f.resolved);
  LSB_ASSIGN_OR_RETURN(UniqueFd dir, OpenDirBeneath(root.get(), comps, comps.size() - 1, false));
  return ReadFileAt(dir.get(), comps.back(), max_bytes);
}

std::vector<std::string> ImagePath(const ImageConfig& config) {
  std::string path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";  // Docker's default
  for (const auto& kv : config.env)
    if (kv.rfind("PATH=", 0) == 0) path = kv.substr(5);
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t colon = path.find(':', pos);
    if (colon == std::string::npos) colon = path.size();
    std::string d = path.substr(pos, colon - pos);
    if (!d.empty() && d[0] == '/') out.push_back(d);
    pos = colon + 1;
  }
  return out;
}

std::map<std::string, ImageFile> FindInterpreters(const ImageRoot& root) {
  std::map<std::string, ImageFile> out;
  for (const char* name : {"python3", "node", "bash", "sh"}) {
    for (const auto& dir : ImagePath(root.config)) {
      auto f = FindInImage(root.layers, dir + "/" + name);
      if (f.ok() && f->executable) {
        out[name] = std::move(f).value();
        break;
      }
    }
  }
  return out;
}

}  // namespace lsb::image
