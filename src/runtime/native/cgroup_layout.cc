#include "runtime/native/cgroup_layout.h"

#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <algorithm>
#include <iterator>
#include <set>
#include <sstream>
#include <vector>

#include "base/io.h"
#include "base/mountinfo.h"

namespace lsb::native {
namespace {

constexpr const char* kControllers[] = {"memory", "cpu", "cpuacct", "pids"};

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t p = s.find(sep, start);
    out.emplace_back(s.substr(start, p == std::string_view::npos ? s.npos : p - start));
    if (p == std::string_view::npos) break;
    start = p + 1;
  }
  return out;
}

struct Mount {
  std::string root;         // the hierarchy path mounted here
  std::string mount_point;
  std::string fstype;       // "cgroup" | "cgroup2"
  std::set<std::string> options;  // super options: the v1 controller names live here
};

std::vector<Mount> ParseCgroupMounts(std::string_view mountinfo) {
  std::vector<Mount> out;
  for (auto& e : ParseMountinfo(mountinfo)) {
    if (e.fstype != "cgroup" && e.fstype != "cgroup2") continue;
    Mount m;
    m.root = std::move(e.root);
    m.mount_point = std::move(e.mount_point);
    m.fstype = std::move(e.fstype);
    m.options.insert(e.super_options.begin(), e.super_options.end());
    out.push_back(std::move(m));
  }
  return out;
}

// Our group path relative to a mount whose root is `root`; nullopt when the mount does not
// contain our group (it shows some other part of the hierarchy).
std::optional<std::string> RelativeTo(const std::string& root, const std::string& path) {
  if (root == "/") return path.empty() ? std::string("/") : path;
  if (path == root) return std::string("/");
  if (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
      path[root.size()] == '/')
    return path.substr(root.size());
  return std::nullopt;
}

std::string Join(const std::string& a, const std::string& b) {
  if (b.empty() || b == "/") return a;
  if (!a.empty() && a.back() == '/') return a + b.substr(b[0] == '/' ? 1 : 0);
  return a + (b[0] == '/' ? "" : "/") + b;
}

}  // namespace

const char* CgroupVersionName(CgroupVersion v) {
  switch (v) {
    case CgroupVersion::kV1: return "cgroup v1";
    case CgroupVersion::kV2: return "cgroup v2";
    case CgroupVersion::kNone: break;
  }
  return "no cgroup";
}

std::string ControllerPlace::dir() const { return Join(mount_point, own_path); }

const ControllerPlace& CgroupLayout::Get(const std::string& controller) const {
  static const ControllerPlace kMissing{CgroupVersion::kNone, "", "", "not a known controller"};
  auto it = controllers.find(controller);
  return it == controllers.end() ? kMissing : it->second;
}


namespace {

// /proc/self/cgroup: "hierarchy-id:controller,list:/path" per v1 hierarchy; the v2 line is "0::/path".
struct ProcCgroup {
  std::vector<std::pair<std::string, std::string>> v1_hierarchies;  // controller list, our path
  std::map<std::string, std::string> v1_paths;                      // controller -> our path
  std::optional<std::string> v2_path;
};

ProcCgroup ParseProcCgroup(std::string_view text) {
  ProcCgroup pc;
  for (const std::string& line : Split(text, '\n')) {
    size_t a = line.find(':');
    if (a == std::string::npos) continue;
    size_t b = line.find(':', a + 1);
    if (b == std::string::npos) continue;
    std::string ids = line.substr(0, a), ctrls = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (ids == "0" && ctrls.empty()) {
      pc.v2_path = path;
      continue;
    }
    for (auto& c : Split(ctrls, ',')) pc.v1_paths[c] = path;
    pc.v1_hierarchies.emplace_back(ctrls, path);
  }
  return pc;
}

// Where each known controller lives, given the cgroup mounts and our groups.
CgroupLayout Resolve(const std::vector<Mount>& mounts, const ProcCgroup& pc, const FileReader& read) {
  // The v2 group (if any) and the controllers it offers.
  std::optional<ControllerPlace> v2_place;
  std::set<std::string> v2_controllers;
  if (pc.v2_path) {
    for (auto& m : mounts) {
      if (m.fstype != "cgroup2") continue;
      auto rel = RelativeTo(m.root, *pc.v2_path);
      if (!rel) continue;
      v2_place = ControllerPlace{CgroupVersion::kV2, m.mount_point, *rel, ""};
      if (auto text = read(v2_place->dir() + "/cgroup.controllers")) {
        std::istringstream cs(*text);
        for (std::string c; cs >> c;) v2_controllers.insert(c);
      }
      break;
    }
  }

  CgroupLayout layout;
  for (const char* name : kControllers) {
    ControllerPlace place;
    std::string ctl = name;
    // v1 first: a controller bound to a v1 hierarchy is absent from v2 (the kernel allows one).
    auto p = pc.v1_paths.find(ctl);
    if (p != pc.v1_paths.end()) {
      for (auto& m : mounts) {
        if (m.fstype != "cgroup" || !m.options.count(ctl)) continue;
        auto rel = RelativeTo(m.root, p->second);
        if (!rel) continue;
        place = ControllerPlace{CgroupVersion::kV1, m.mount_point, *rel, ""};
        break;
      }
      if (place.version == CgroupVersion::kNone)
        place.reason = "the " + ctl + " v1 hierarchy (our group " + p->second +
                       ") is not mounted in this mount namespace";
    }
    if (place.version == CgroupVersion::kNone && v2_place) {
      // cpuacct has no v2 controller: usage is the core file cpu.stat of every v2 group.
      if (ctl == "cpuacct" || v2_controllers.count(ctl)) {
        place = *v2_place;
      } else if (place.reason.empty()) {
        place.reason = "cgroup v2 at " + v2_place->dir() + " does not offer the " + ctl +
                       " controller (cgroup.controllers) and no v1 hierarchy has it";
      }
    }
    if (place.version == CgroupVersion::kNone && place.reason.empty())
      place.reason = "no cgroup v1 hierarchy or cgroup v2 tree with the " + ctl +
                     " controller is mounted";
    layout.controllers[ctl] = std::move(place);
  }
  return layout;
}

}  // namespace

CgroupLayout ParseCgroupLayout(std::string_view mountinfo, std::string_view proc_cgroup,
                               const FileReader& read) {
  return Resolve(ParseCgroupMounts(mountinfo), ParseProcCgroup(proc_cgroup), read);
}

std::optional<CgroupLayout> StandardCgroupLayout(std::string_view proc_cgroup, const MountProbe& probe,
                                                 const FileReader& read) {
  const ProcCgroup pc = ParseProcCgroup(proc_cgroup);
  // A file each v1 controller has in its hierarchy's root: the directory named after the
  // controller must really hold that controller's hierarchy. (pids has none at the root; a
  // wrong pids hierarchy would fail the box's pids.max write, loudly.)
  static const std::map<std::string, std::string> kRootFile = {
      {"memory", "memory.limit_in_bytes"}, {"cpu", "cpu.cfs_period_us"}, {"cpuacct", "cpuacct.usage"}};
  std::vector<Mount> mounts;
  std::set<uint64_t> devices;  // each v1 hierarchy is its own file system
  for (const auto& [list, path] : pc.v1_hierarchies) {
    auto controllers = Split(list, ',');
    bool needed = std::any_of(controllers.begin(), controllers.end(), [](const std::string& c) {
      return std::find(std::begin(kControllers), std::end(kControllers), c) != std::end(kControllers);
    });
    if (!needed) continue;
    const std::string mount_point = "/sys/fs/cgroup/" + list;
    auto m = probe(mount_point);
    if (!m || m->version != CgroupVersion::kV1 || m->inode != kHierarchyRootInode || !devices.insert(m->device).second)
      return std::nullopt;
    for (const auto& c : controllers) {
      auto file = kRootFile.find(c);
      if (file != kRootFile.end() && !probe(mount_point + "/" + file->second)) return std::nullopt;
    }
    mounts.push_back(Mount{"/", mount_point, "cgroup", std::set<std::string>(controllers.begin(), controllers.end())});
  }
  if (pc.v2_path) {
    // Hybrid hosts mount v2 at .../unified; unified hosts at /sys/fs/cgroup itself.
    bool v2_found = false;
    for (const char* mount_point : {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
      auto m = probe(mount_point);
      if (m && m->version == CgroupVersion::kV2 && m->inode == kHierarchyRootInode) {
        mounts.push_back(Mount{"/", mount_point, "cgroup2", {}});
        v2_found = true;
        break;
      }
    }
    bool all_v1 = std::all_of(std::begin(kControllers), std::end(kControllers),
                              [&](const char* c) { return pc.v1_paths.count(c) > 0; });
    if (!v2_found && !all_v1) return std::nullopt;
  }
  return Resolve(mounts, pc, read);
}

FileReader LiveFileReader() {
  return [](const std::string& path) -> std::optional<std::string> {
    auto r = ReadFile(path);
    if (!r.ok()) return std::nullopt;
    return *r;
  };
}

MountProbe LiveMountProbe() {
  return [](const std::string& path) -> std::optional<ProbedPath> {
    struct statfs fs {};
    struct stat st {};
    if (::statfs(path.c_str(), &fs) != 0 || ::stat(path.c_str(), &st) != 0) return std::nullopt;
    ProbedPath p;
    if (fs.f_type == CGROUP_SUPER_MAGIC) p.version = CgroupVersion::kV1;
    if (fs.f_type == CGROUP2_SUPER_MAGIC) p.version = CgroupVersion::kV2;
    p.device = st.st_dev;
    p.inode = st.st_ino;
    return p;
  };
}

CgroupLayout DetectCgroupLayout() {
  auto cg = ReadFile("/proc/self/cgroup");
  const std::string proc_cgroup = cg.ok() ? *cg : "";
  if (auto standard = StandardCgroupLayout(proc_cgroup, LiveMountProbe(), LiveFileReader())) return *standard;
  auto mi = ReadFile("/proc/self/mountinfo");
  return ParseCgroupLayout(mi.ok() ? *mi : "", proc_cgroup, LiveFileReader());
}

}  // namespace lsb::native
