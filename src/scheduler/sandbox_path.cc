#include "scheduler/sandbox_path.h"

namespace lsb::sched {
namespace {

std::string Writable(const Policy& policy) {
  std::string s;
  for (const auto& t : WritableDirs(policy)) s += (s.empty() ? "" : ", ") + t;
  return s.empty() ? "none" : s;
}

}  // namespace

std::vector<std::string> WritableDirs(const Policy& policy) {
  std::vector<std::string> out;
  for (const auto& t : policy.tmpfs) out.push_back(t.path);
  for (const auto& m : policy.mounts)
    if (m.mode == "overlay") out.push_back(m.target);
  return out;
}

bool IsNormalizedAbsolute(const std::string& path) {
  if (path.empty() || path[0] != '/' || path.size() > 4096 || (path.size() > 1 && path.back() == '/')) return false;
  for (char c : path)
    if (c == '\0' || c == '\n' || c == '\r') return false;
  for (size_t i = 1; i < path.size();) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    std::string_view comp(path.data() + i, j - i);
    if (comp.empty() || comp == "." || comp == "..") return false;
    i = j + 1;
  }
  return true;
}

Result<std::string> CheckSandboxDir(const Policy& policy, const std::string& path) {
  for (const auto& t : WritableDirs(policy))
    if (t == path && IsNormalizedAbsolute(path) && path != "/") return path;
  return CheckSandboxPath(policy, path);
}

Result<std::string> CheckSandboxPath(const Policy& policy, const std::string& path) {
  if (path.empty()) return Error{"path is empty; give an absolute path such as /tmp/data.csv"};
  if (path.size() > 4096) return Error{"path is longer than 4096 bytes"};
  if (path[0] != '/') return Error{"path '" + path + "' is not absolute; give one such as /tmp/data.csv"};
  for (char c : path)
    if (c == '\0' || c == '\n' || c == '\r') return Error{"path contains a NUL or newline character"};
  if (path.back() == '/') return Error{"path '" + path + "' names a directory; give a file path"};
  // Normalized: no empty, "." or ".." component.
  size_t i = 1;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    std::string comp = path.substr(i, j - i);
    if (comp.empty() || comp == "." || comp == "..")
      return Error{"path '" + path + "' is not normalized (it has an empty, '.' or '..' component); "
                   "traversal out of the sandbox's writable dirs is refused"};
    i = j + 1;
  }
  for (const auto& t : WritableDirs(policy)) {
    std::string root = t;
    while (root.size() > 1 && root.back() == '/') root.pop_back();
    std::string prefix = root == "/" ? "/" : root + "/";
    if (path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0) return path;
  }
  return Error{"path '" + path + "' is outside the sandbox's writable dirs (policy '" + policy.name +
               "' has: " + Writable(policy) + ")"};
}

}  // namespace lsb::sched
