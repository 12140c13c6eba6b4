#include "runtime/native/box_cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <thread>

#include "base/io.h"

namespace lsb::native {
namespace {

constexpr uint64_t kCpuPeriodUs = 100000;

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

Status MakeDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST) return OkStatus();
  return Error::FromErrno("cannot create a cgroup under " + dir.substr(0, dir.rfind('/')) +
                          " (mkdir " + dir + ")");
}

std::string FixHint(int err) {
  if (err == EACCES || err == EPERM || err == EROFS)
    return "; run as root or delegate a cgroup to this user (chown the directory to it)";
  return "";
}

// "key value" lines (memory.events, pids.events, cpu.stat, memory.oom_control).
std::optional<uint64_t> KeyedValue(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string k;
  uint64_t v;
  while (in >> k) {
    if (k == key && (in >> v)) return v;
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return std::nullopt;
}

std::optional<uint64_t> ReadNumber(const std::string& path) {
  auto t = ReadFile(path);
  if (!t.ok()) return std::nullopt;
  try {
    return std::stoull(*t);
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<uint64_t> ReadKeyed(const std::string& path, const std::string& key) {
  auto t = ReadFile(path);
  if (!t.ok()) return std::nullopt;
  return KeyedValue(*t, key);
}

std::vector<pid_t> Procs(const std::string& dir) {
  std::vector<pid_t> out;
  auto t = ReadFile(dir + "/cgroup.procs");
  if (!t.ok()) return out;
  std::istringstream in(*t);
  for (long p; in >> p;) out.push_back(static_cast<pid_t>(p));
  return out;
}

// v2: a controller reaches a child group only when enabled in the parent's subtree_control.
Status Delegate(const std::string& dir, const std::string& controller) {
  auto cur = ReadFile(dir + "/cgroup.subtree_control");
  if (cur.ok() && (" " + *cur).find(" " + controller) != std::string::npos) return OkStatus();
  auto st = WriteFile(dir + "/cgroup.subtree_control", "+" + controller);
  if (!st.ok()) {
    std::string hint = st.error().sys_errno == EBUSY
                           ? "; this process's own cgroup has processes, so it cannot delegate: "
                             "start llm-sandbox in a leaf cgroup (e.g. systemd-run --scope -p "
                             "Delegate=yes)"
                           : FixHint(st.error().sys_errno);
    return Error{"cannot enable the " + controller + " controller for child groups of " + dir +
                     ": " + st.error().message + hint,
                 st.error().sys_errno};
  }
  return OkStatus();
}

// The controllers a box needs: memory and pids always (the verdict reads them), cpu only when
// limited, cpuacct (usage) best effort.
std::vector<std::string> Needed(const CgroupLimits& l) {
  std::vector<std::string> out{"memory", "pids"};
  if (l.cpu > 0) out.push_back("cpu");
  return out;
}

std::string ControlOf(const std::string& controller) { return "resources." + controller; }

std::string HowEnforced(const std::string& controller, CgroupVersion v, const std::string& dir) {
  std::string files;
  if (controller == "memory")
    files = v == CgroupVersion::kV1 ? "memory.limit_in_bytes (+ memory.memsw.limit_in_bytes)"
                                    : "memory.max + memory.swap.max";
  else if (controller == "cpu")
    files = v == CgroupVersion::kV1 ? "cpu.cfs_quota_us/cpu.cfs_period_us" : "cpu.max";
  else
    files = "pids.max";
  return std::string(CgroupVersionName(v)) + " " + files + " under " + dir;
}

}  // namespace

std::vector<CgroupControl> ProbeCgroups(const CgroupLayout& layout, const std::string& parent_name,
                                        const CgroupLimits& limits) {
  std::vector<CgroupControl> out;
  for (const auto& ctl : Needed(limits)) {
    CgroupControl c{ControlOf(ctl), false, ""};
    const auto& place = layout.Get(ctl);
    if (place.version == CgroupVersion::kNone) {
      c.how = place.reason;
      out.push_back(c);
      continue;
    }
    std::string parent = place.dir() + "/" + parent_name;
    Status st = OkStatus();
    if (place.version == CgroupVersion::kV2) st = Delegate(place.dir(), ctl);
    if (st.ok()) st = MakeDir(parent);
    if (st.ok() && place.version == CgroupVersion::kV2) st = Delegate(parent, ctl);
    if (st.ok() && ::access(parent.c_str(), W_OK) != 0)
      st = Error::FromErrno("cannot create a cgroup under " + parent);
    if (!st.ok()) {
      c.how = st.error().message + FixHint(st.error().sys_errno);
    } else {
      c.enforced = true;
      c.how = HowEnforced(ctl, place.version, parent + "/<box>");
    }
    out.push_back(c);
  }
  return out;
}

size_t RemoveStaleBoxGroups(const CgroupLayout& layout, const std::string& parent_name,
                            std::chrono::seconds min_age) {
  std::set<std::string> parents;  // v2, or v1 hierarchies mounted together, share a directory
  for (const char* ctl : {"memory", "cpu", "pids", "cpuacct"}) {
    const auto& place = layout.Get(ctl);
    if (place.version != CgroupVersion::kNone) parents.insert(place.dir() + "/" + parent_name);
  }
  const auto now = std::chrono::system_clock::now();
  size_t removed = 0;
  for (const auto& parent : parents) {
    DIR* d = ::opendir(parent.c_str());
    if (!d) continue;
    std::vector<std::string> stale;
    while (dirent* e = ::readdir(d)) {
      if (std::strncmp(e->d_name, "native-", 7) != 0) continue;
      std::string dir = parent + "/" + e->d_name;
      struct stat st {};
      if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
      auto born = std::chrono::system_clock::from_time_t(st.st_mtime);
      if (now - born >= min_age && Procs(dir).empty()) stale.push_back(dir);
    }
    ::closedir(d);
    for (const auto& dir : stale)
      if (::rmdir(dir.c_str()) == 0) ++removed;  // EBUSY: a process joined meanwhile; keep it
  }
  return removed;
}

Result<std::unique_ptr<BoxCgroups>> BoxCgroups::Create(const CgroupLayout& layout,
                                                       const std::string& parent_name,
                                                       const std::string& box_id,
                                                       const CgroupLimits& limits) {
  std::unique_ptr<BoxCgroups> cg(new BoxCgroups());
  auto add_group = [&](const std::string& ctl, bool required) -> Status {
    const auto& place = layout.Get(ctl);
    if (place.version == CgroupVersion::kNone) {
      if (!required) return OkStatus();
      return Error{ControlOf(ctl) + ": " + place.reason};
    }
    std::string parent = place.dir() + "/" + parent_name;
    std::string dir = parent + "/" + box_id;
    bool v2 = place.version == CgroupVersion::kV2 && ctl != "cpuacct";
    Status st = OkStatus();
    if (v2) st = Delegate(place.dir(), ctl);
    if (st.ok()) st = MakeDir(parent);
    if (st.ok() && v2) st = Delegate(parent, ctl);
    if (st.ok()) {
      for (auto& g : cg->groups_) {
        if (g.dir == dir) {  // v2, or v1 hierarchies mounted together ("cpu,cpuacct")
          g.controllers.insert(ctl);
          return OkStatus();
        }
      }
      if (::mkdir(dir.c_str(), 0755) != 0)
        st = Error::FromErrno("cannot create a cgroup under " + parent + " (mkdir " + dir + ")");
    }
    if (!st.ok()) {
      if (!required) return OkStatus();
      return Error{ControlOf(ctl) + ": " + st.error().message + FixHint(st.error().sys_errno),
                   st.error().sys_errno};
    }
    cg->groups_.push_back(Group{place.version, dir, {ctl}});
    return OkStatus();
  };
  for (const auto& ctl : Needed(limits)) LSB_TRY(add_group(ctl, true));
  LSB_TRY(add_group("cpuacct", false));
  auto write = [&](const std::string& ctl, const std::string& file, const std::string& value) -> Status {
    const Group* g = cg->Find(ctl);
    if (!g) return Error{ControlOf(ctl) + ": no group for the " + ctl + " controller"};
    auto st = WriteFile(g->dir + "/" + file, value);
    if (!st.ok())
      return Error{ControlOf(ctl) + ": cannot set " + file + "=" + value + ": " + st.error().message,
                   st.error().sys_errno};
    return OkStatus();
  };
  if (limits.memory_bytes > 0) {
    const Group* g = cg->Find("memory");
    std::string v = std::to_string(limits.memory_bytes);
    if (g->version == CgroupVersion::kV1) {
      LSB_TRY(write("memory", "memory.limit_in_bytes", v));
      // Without memsw the box could swap instead of hitting its limit; with it, no swap at all.
      if (Exists(g->dir + "/memory.memsw.limit_in_bytes"))
        LSB_TRY(write("memory", "memory.memsw.limit_in_bytes", v));
    } else {
      LSB_TRY(write("memory", "memory.max", v));
      if (Exists(g->dir + "/memory.swap.max")) LSB_TRY(write("memory", "memory.swap.max", "0"));
    }
  }
  if (limits.cpu > 0) {
    const Group* g = cg->Find("cpu");
    auto quota = std::max<uint64_t>(1000, static_cast<uint64_t>(std::llround(limits.cpu * kCpuPeriodUs)));
    if (g->version == CgroupVersion::kV1) {
      LSB_TRY(write("cpu", "cpu.cfs_period_us", std::to_string(kCpuPeriodUs)));
      LSB_TRY(write("cpu", "cpu.cfs_quota_us", std::to_string(quota)));
    } else {
      LSB_TRY(write("cpu", "cpu.max", std::to_string(quota) + " " + std::to_string(kCpuPeriodUs)));
    }
  }
  if (limits.pids > 0) LSB_TRY(write("pids", "pids.max", std::to_string(limits.pids)));
  return cg;
}

BoxCgroups::~BoxCgroups() { (void)Destroy(); }

const BoxCgroups::Group* BoxCgroups::Find(const std::string& controller) const {
  for (const auto& g : groups_)
    if (g.controllers.count(controller)) return &g;
  return nullptr;
}

std::vector<std::string> BoxCgroups::dirs() const {
  std::vector<std::string> out;
  for (const auto& g : groups_) out.push_back(g.dir);
  return out;
}

Status BoxCgroups::AddProcess(pid_t pid, bool skip_v1) {
  for (const auto& g : groups_) {
    if (skip_v1 && g.version == CgroupVersion::kV1) continue;
    auto st = WriteFile(g.dir + "/cgroup.procs", std::to_string(pid));
    if (!st.ok()) return st.error().Wrap("move pid " + std::to_string(pid) + " into its cgroup");
  }
  return OkStatus();
}

Result<std::vector<UniqueFd>> BoxCgroups::SelfAttachFiles() const {
  std::vector<UniqueFd> out;
  for (const auto& g : groups_) {
    if (g.version != CgroupVersion::kV1) continue;
    std::string path = g.dir + "/tasks";
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) return Error::FromErrno("open " + path + " (the box joins its cgroup through it)");
    out.push_back(std::move(fd));
  }
  return out;
}

Result<std::vector<UniqueFd>> BoxCgroups::JoinFiles() const {
  std::vector<UniqueFd> out;
  for (const auto& g : groups_) {
    std::string path = g.dir + (g.version == CgroupVersion::kV1 ? "/tasks" : "/cgroup.procs");
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) return Error::FromErrno("open " + path + " (the box joins its cgroup through it)");
    out.push_back(std::move(fd));
  }
  return out;
}

CgroupStats BoxCgroups::Read() const {
  CgroupStats s;
  if (const Group* g = Find("memory")) {
    if (g->version == CgroupVersion::kV1) {
      s.oom_kills = ReadKeyed(g->dir + "/memory.oom_control", "oom_kill").value_or(0);
      s.memory_peak_bytes = ReadNumber(g->dir + "/memory.max_usage_in_bytes");
      s.memory_current_bytes = ReadNumber(g->dir + "/memory.usage_in_bytes");
    } else {
      s.memory_current_bytes = ReadNumber(g->dir + "/memory.current");
      s.oom_kills = ReadKeyed(g->dir + "/memory.events", "oom_kill").value_or(0);
      s.memory_peak_bytes = ReadNumber(g->dir + "/memory.peak");
    }
  }
  if (const Group* g = Find("pids")) s.pids_max_events = ReadKeyed(g->dir + "/pids.events", "max").value_or(0);
  if (const Group* g = Find("cpuacct")) {
    if (g->version == CgroupVersion::kV1) {
      s.cpu_ns = ReadNumber(g->dir + "/cpuacct.usage");
    } else if (auto us = ReadKeyed(g->dir + "/cpu.stat", "usage_usec")) {
      s.cpu_ns = *us * 1000;
    }
  }
  return s;
}

void BoxCgroups::ResetPeak() {
  if (const Group* g = Find("memory"); g && g->version == CgroupVersion::kV1)
    (void)WriteFile(g->dir + "/memory.max_usage_in_bytes", "0");
}

Status BoxCgroups::Destroy() {
  if (destroyed_) return OkStatus();
  destroyed_ = true;
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::seconds(3);
  // Kill first, in every group: a process could sit in one hierarchy's group only.
  for (const auto& g : groups_) {
    if (g.version == CgroupVersion::kV2 && Exists(g.dir + "/cgroup.kill")) {
      (void)WriteFile(g.dir + "/cgroup.kill", "1");
      continue;
    }
    for (int round = 0; round < 100; ++round) {
      auto procs = Procs(g.dir);
      if (procs.empty()) break;
      for (pid_t p : procs) ::kill(p, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  // rmdir fails with EBUSY while killed tasks are still exiting: retry briefly.
  std::string failures;
  for (const auto& g : groups_) {
    for (int attempt = 0;; ++attempt) {
      if (::rmdir(g.dir.c_str()) == 0 || errno == ENOENT) break;
      int err = errno;
      if (err != EBUSY || Clock::now() > deadline) {
        failures += (failures.empty() ? "" : "; ") + Error::FromErrno("rmdir " + g.dir, err).message;
        break;
      }
      for (pid_t p : Procs(g.dir)) ::kill(p, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(attempt < 10 ? 1 : 10));
    }
  }
  if (!failures.empty()) return Error{"remove box cgroups: " + failures};
  return OkStatus();
}

}  // namespace lsb::native
