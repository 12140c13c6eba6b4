#include "runtime/native/idmap.h"

#include "base/io.h"

namespace lsb::native {

IdMapPlan PlanIdMap(bool privileged, uid_t host_uid, gid_t host_gid, uint32_t base, uint32_t count) {
  IdMapPlan p;
  if (privileged) {
    p.full_range = true;
    p.count = count;
    p.uid_map = "0 " + std::to_string(base) + " " + std::to_string(count) + "\n";
    p.gid_map = p.uid_map;
    p.describe = "ids 0-" + std::to_string(count - 1) + " -> host " + std::to_string(base) + "-" +
                 std::to_string(static_cast<uint64_t>(base) + count - 1);
  } else {
    p.count = 1;
    p.deny_setgroups = true;
    p.uid_map = "0 " + std::to_string(host_uid) + " 1\n";
    p.gid_map = "0 " + std::to_string(host_gid) + " 1\n";
    p.describe = "only uid 0 -> host uid " + std::to_string(host_uid) +
                 " (an unprivileged user may map just its own id)";
  }
  return p;
}

Status WriteIdMaps(pid_t pid, const IdMapPlan& plan) {
  std::string proc = "/proc/" + std::to_string(pid);
  if (plan.deny_setgroups) LSB_TRY(WriteFile(proc + "/setgroups", "deny"));
  auto st = WriteFile(proc + "/uid_map", plan.uid_map);
  if (!st.ok()) return st.error().Wrap("write uid map (" + plan.describe + ")");
  st = WriteFile(proc + "/gid_map", plan.gid_map);
  if (!st.ok()) return st.error().Wrap("write gid map (" + plan.describe + ")");
  return OkStatus();
}

}  // namespace lsb::native
