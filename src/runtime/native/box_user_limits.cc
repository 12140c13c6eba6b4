#include "runtime/native/box_user_limits.h"

#include <sys/random.h>
#include <sys/resource.h>

#include <chrono>

namespace lsb::native {

BoxUserLimits DefaultBoxUserLimits() {
  BoxUserLimits l;
  for (const auto& s : kBoxUserNsLimits)
    l.sysctls.push_back({std::string("/proc/sys/user/") + s.name, std::to_string(s.value)});
  for (BoxRlimit r : kBoxRlimits) {
    // Never above our own hard limit: raising one needs CAP_SYS_RESOURCE on the host, which the
    // launch child (privileged only in the box's namespace) lacks.
    struct rlimit cur {};
    if (::getrlimit(r.resource, &cur) == 0 && cur.rlim_max != RLIM_INFINITY && cur.rlim_max < r.value)
      r.value = cur.rlim_max;
    l.rlimits.push_back(r);
  }
  return l;
}

std::string DescribeBoxUserLimits() {
  std::string out;
  bool namespaces = false;
  for (const auto& s : kBoxUserNsLimits) {
    std::string name = s.name;
    if (name.find("_namespaces") != std::string::npos) {
      namespaces = true;
      continue;
    }
    out += (out.empty() ? "" : ", ") + name + " " + std::to_string(s.value);
  }
  if (namespaces) out += ", no new namespaces";
  for (const auto& r : kBoxRlimits) {
    const char* name = r.resource == RLIMIT_SIGPENDING ? "RLIMIT_SIGPENDING"
                       : r.resource == RLIMIT_MSGQUEUE ? "RLIMIT_MSGQUEUE"
                       : r.resource == RLIMIT_MEMLOCK  ? "RLIMIT_MEMLOCK"
                                                       : "rlimit";
    out += std::string(", ") + name + " " + std::to_string(r.value);
  }
  return out;
}

uid_t PickBoxOwner(uint32_t base, uint32_t count) {
  uint32_t r = 0;
  if (::getrandom(&r, sizeof r, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof r))
    r = static_cast<uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return static_cast<uid_t>(base + (count ? r % count : 0));
}

}  // namespace lsb::native
