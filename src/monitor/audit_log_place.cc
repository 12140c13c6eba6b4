#include "monitor/audit_log_place.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "base/state_dir.h"

namespace lsb::monitor {

std::string DaemonKey(const std::string& host, uint16_t port) {
  std::string key;
  for (char c : host) key += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ? c : '_';
  return key + "_" + std::to_string(port);
}

std::string DaemonAuditLogPath(const std::string& host, uint16_t port) {
  if (const char* env = std::getenv("LLM_SANDBOX_AUDIT_LOG"); env && *env) return env;
  std::string dir = DefaultStateDir();
  return dir.empty() ? "" : dir + "/daemons/" + DaemonKey(host, port) + "/audit.jsonl";
}

std::vector<FoundAuditLog> FindDaemonAuditLogs() {
  std::vector<FoundAuditLog> out;
  std::string state = DefaultStateDir();
  if (state.empty()) return out;
  std::string root = state + "/daemons";
  DIR* dir = ::opendir(root.c_str());
  if (!dir) return out;
  while (dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string path = root + "/" + name + "/audit.jsonl";
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    out.push_back({name, path, static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec});
  }
  ::closedir(dir);
  std::sort(out.begin(), out.end(), [](const FoundAuditLog& a, const FoundAuditLog& b) {
    return a.mtime_ns != b.mtime_ns ? a.mtime_ns > b.mtime_ns : a.key < b.key;
  });
  return out;
}

std::string KeyOfListenAddress(const std::string& address) {
  size_t colon = address.rfind(':');
  std::string host = colon == std::string::npos ? "127.0.0.1" : address.substr(0, colon);
  std::string port = colon == std::string::npos ? address : address.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), ::isdigit)) return "";
  unsigned long p = std::strtoul(port.c_str(), nullptr, 10);
  if (p > 65535) return "";
  return DaemonKey(host, static_cast<uint16_t>(p));
}

}  // namespace lsb::monitor
