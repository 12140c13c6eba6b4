#include "runtime/docker/ownership.h"

#include <signal.h>
#include <unistd.h>

#include <sstream>
#include <vector>

#include "base/io.h"
#include "runtime/docker/container_spec.h"

namespace lsb::docker {
namespace {

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

// Field 22 of /proc/<pid>/stat: start time in clock ticks since boot; tells a reused pid apart.
std::string StartTime(pid_t pid) {
  auto stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.ok()) return "";
  size_t close = stat->rfind(')');  // comm may contain spaces
  if (close == std::string::npos) return "";
  std::istringstream in(stat->substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && in >> field; ++i) {
    if (i == 22) return field;
  }
  return "";
}

}  // namespace

std::string OwnerLabel() {
  pid_t pid = getpid();
  return HostName() + "/" + std::to_string(pid) + "/" + StartTime(pid);
}

bool OwnerAlive(const std::string& owner) {
  size_t a = owner.find('/');
  size_t b = owner.find('/', a == std::string::npos ? 0 : a + 1);
  if (a == std::string::npos || b == std::string::npos) return false;  // malformed: ours, and dead
  if (owner.substr(0, a) != HostName()) return true;
  pid_t pid = static_cast<pid_t>(std::atoi(owner.substr(a + 1, b - a - 1).c_str()));
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  return StartTime(pid) == owner.substr(b + 1);
}

Result<ReapReport> ReapOrphans(const EngineClient& engine) {
  LSB_ASSIGN_OR_RETURN(Json list, engine.ListContainers(kLabelOwner));
  ReapReport report;
  if (!list.is_array()) return report;
  for (const auto& c : list) {
    std::string id = c.value("Id", "");
    std::string owner;
    if (c.contains("Labels") && c["Labels"].is_object()) owner = c["Labels"].value(kLabelOwner, "");
    if (id.empty() || OwnerAlive(owner)) {
      ++report.kept;
      continue;
    }
    auto st = engine.RemoveContainer(id, true);
    if (!st.ok()) return st.error().Wrap("remove orphan container");
    ++report.removed;
  }
  return report;
}

}  // namespace lsb::docker
