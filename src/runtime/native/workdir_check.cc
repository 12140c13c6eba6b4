#include "runtime/native/workdir_check.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>


namespace lsb::native {
namespace {

bool IsUnder(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

// "/a/./b/../c" -> {"a", "c"}; ".." stops at the root, as the kernel's lookup does.
std::vector<std::string> Components(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    std::string part = path.substr(start, slash - start);
    if (part == "..") {
      if (!out.empty()) out.pop_back();
    } else if (!part.empty() && part != ".") {
      out.push_back(part);
    }
    start = slash + 1;
  }
  return out;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

// The entry at `dir`/`name` of the union: the top-most layer that has it, unless a higher layer
// removed it (a whiteout) or hid the lower ones (an opaque directory). False when none has it.
bool FindEntry(const std::vector<std::string>& layers, const std::string& dir, const std::string& name,
               std::string* found) {
  for (const std::string& layer : layers) {
    std::string base = layer == "/" ? "" : layer;
    if (Exists(base + dir + "/.wh." + name)) return false;
    if (Exists(base + dir + "/" + name)) {
      *found = base + dir + "/" + name;
      return true;
    }
    if (Exists(base + dir + "/.wh..wh..opq")) return false;
  }
  return false;
}

bool Lookup(const std::vector<std::string>& layers, const std::string& path, int links) {
  if (links > 40) return false;  // ELOOP
  std::vector<std::string> parts = Components(path);
  std::string dir;  // resolved so far, "" = the root
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string found;
    if (!FindEntry(layers, dir, parts[i], &found)) return false;
    struct stat st;
    if (::lstat(found.c_str(), &st) != 0) return false;
    if (S_ISLNK(st.st_mode)) {
      std::array<char, 4096> buf{};
      ssize_t n = ::readlink(found.c_str(), buf.data(), buf.size() - 1);
      if (n <= 0) return false;
      std::string target(buf.data(), static_cast<size_t>(n));
      std::string next = target[0] == '/' ? target : dir + "/" + target;  // inside the root, as in the box
      for (size_t j = i + 1; j < parts.size(); ++j) next += "/" + parts[j];
      return Lookup(layers, next, links + 1);
    }
    if (!S_ISDIR(st.st_mode)) return false;
    dir += "/" + parts[i];
  }
  return true;
}

WorkdirFinding Missing(const Policy& p, const std::string& where) {
  const std::string& w = p.workdir;
  return {WorkdirFinding::Verdict::kMissing,
          "container.workdir: " + w + " does not exist in the box: " + where,
          "create it in the image (container.build with run: [\"mkdir -p " + w + "\"]), make it a tmpfs "
          "(container.tmpfs: {" + w + ": \"size=64M\"}), or set workdir to a directory the image has, such as /tmp"};
}

// The image's own root, as init will place it (init/mounts.cc OpenSourceRoot).
WorkdirFinding InImage(const Policy& p, const BoxRoot& root) {
  const std::string& w = p.workdir;
  std::string first = Components(w).at(0);
  if (first == "proc" || first == "dev" || (first == "etc" && w == "/etc")) return {};
  if (root.rootfs == "host") {
    static const std::vector<std::string> kHostDirs = {"usr", "lib", "lib32", "lib64", "libx32", "bin", "sbin", "opt"};
    if (std::find(kHostDirs.begin(), kHostDirs.end(), first) == kHostDirs.end())
      return Missing(p, "the image 'host' is the host's /usr, /bin, /sbin, /lib*, /opt and a synthetic /etc only, "
                        "and no tmpfs or mount of the policy holds it");
    if (Lookup({"/"}, w, 0)) return {};
    return Missing(p, "the host has no directory " + w);
  }
  std::vector<std::string> layers;
  if (root.rootfs == "image" && root.image) {
    layers.assign(root.image->layers.rbegin(), root.image->layers.rend());
  } else if (root.rootfs != "image") {
    layers = {root.rootfs};
  }
  if (layers.empty())
    return {WorkdirFinding::Verdict::kNotInspected, "container.image '" + p.image + "': " + root.how, ""};
  if (IsDirectoryInLayers(layers, w)) return {};
  return Missing(p, "container.image '" + p.image + "' (" + root.how + ") has no directory " + w +
                        ", and no tmpfs or mount of the policy holds it");
}

}  // namespace

bool IsDirectoryInLayers(const std::vector<std::string>& layers, const std::string& path) {
  return Lookup(layers, path, 0);
}

WorkdirFinding CheckWorkdir(const Policy& p, const Result<BoxRoot>& root) {
  if (!p.positions.count("container.workdir")) return {};
  const std::string& w = p.workdir;
  if (w == "/") return {};
  // The policy's own mounts, deepest first: the one that holds the workdir decides.
  const TmpfsMount* tmpfs = nullptr;
  const HostMount* mount = nullptr;
  size_t depth = 0;
  for (const auto& t : p.tmpfs) {
    if (IsUnder(t.path, w)) return {};  // the tmpfs itself, or a directory init makes on the way to it
    if (IsUnder(w, t.path) && t.path.size() >= depth) tmpfs = &t, mount = nullptr, depth = t.path.size();
  }
  for (const auto& m : p.mounts) {
    if (IsUnder(m.target, w)) return {};
    if (IsUnder(w, m.target) && m.target.size() >= depth) mount = &m, tmpfs = nullptr, depth = m.target.size();
  }
  if (tmpfs)
    return Missing(p, "it is inside the tmpfs " + tmpfs->path + ", which starts empty in every box");
  if (mount) {
    std::string host = mount->source + w.substr(mount->target.size());
    if (IsDirectoryInLayers({"/"}, host)) return {};
    return Missing(p, "it is inside the mount " + mount->target + " of host directory " + mount->source +
                          ", which has no directory " + host);
  }
  if (!root.ok())
    return {WorkdirFinding::Verdict::kNotInspected, "container.image '" + p.image + "' cannot be inspected here: " +
                                                        root.error().message.substr(0, root.error().message.find('\n')),
            ""};
  if (root->pull_pending)
    return {WorkdirFinding::Verdict::kNotInspected,
            "container.image '" + p.image + "' is not in the image store yet (pulled when a box first needs it)", ""};
  WorkdirFinding in_image = InImage(p, *root);
  // container.build's steps may make it (run: mkdir): the built image is not known before the build.
  if (in_image.verdict == WorkdirFinding::Verdict::kMissing && !p.build.empty())
    return {WorkdirFinding::Verdict::kNotInspected,
            "container.image '" + p.image + "' has no " + w + ", and container.build may make it (the built image is "
            "not known before its build)", ""};
  return in_image;
}

}  // namespace lsb::native
