#include "runtime/mount_roots.h"

#include <sys/stat.h>

#include <climits>
#include <cstdlib>

namespace lsb {
namespace {

bool IsUnderDir(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

constexpr const char* kFix = "start the daemon with --mount-root DIR (llm-sandbox serve --mount-root, or run "
                             "--mount-root / --workspace) naming a directory that holds it";

}  // namespace

Result<std::string> RealDirectory(const std::string& path, const std::string& what) {
  char real[PATH_MAX];
  if (::realpath(path.c_str(), real) == nullptr) return Error::FromErrno(what + " '" + path + "'");
  struct stat st;
  if (::stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) return Error{what + " '" + path + "' is not a directory"};
  return std::string(real);
}

Result<std::vector<protocol::MountSpec>> ResolveHostMounts(const std::vector<protocol::MountSpec>& mounts,
                                                           const std::vector<std::string>& roots) {
  std::vector<protocol::MountSpec> out;
  if (mounts.empty()) return out;
  std::vector<std::string> real_roots;
  for (const auto& r : roots) {
    auto real = RealDirectory(r, "--mount-root");
    if (!real.ok()) return real.error();
    real_roots.push_back(*real);
  }
  for (auto m : mounts) {
    if (real_roots.empty())
      return Error{ErrorCode::kPermissionDenied, "container.mounts: source '" + m.source +
                                                     "' is refused: this daemon allows no host directories; " + kFix};
    auto real = RealDirectory(m.source, "container.mounts: source");
    if (!real.ok()) return real.error();
    bool inside = false;
    for (const auto& r : real_roots) inside = inside || IsUnderDir(*real, r);
    if (!inside) {
      std::string shown = *real == m.source ? "" : " (really " + *real + ")";
      std::string list;
      for (const auto& r : real_roots) list += (list.empty() ? "" : ", ") + r;
      return Error{ErrorCode::kPermissionDenied, "container.mounts: source '" + m.source + "'" + shown +
                                                     " is outside the allowed mount roots (" + list + "); " + kFix};
    }
    m.source = *real;
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace lsb
