#include "runtime/native/cgroup_layout.h"

#include <set>
#include <sstream>
#include <vector>

#include "base/io.h"

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
  std::istringstream in{std::string(mountinfo)};
  std::string line;
  while (std::getline(in, line)) {
    // id parent maj:min root mount_point mount_opts [optional...] - fstype source super_opts
    std::vector<std::string> f;
    std::istringstream ls(line);
    for (std::string w; ls >> w;) f.push_back(w);
    size_t dash = 0;
    for (size_t i = 6; i < f.size(); ++i) {
      if (f[i] == "-") {
        dash = i;
        break;
      }
    }
    if (dash == 0 || dash + 1 >= f.size()) continue;
    const std::string& fstype = f[dash + 1];
    if (fstype != "cgroup" && fstype != "cgroup2") continue;
    Mount m;
    m.root = UnescapeMountinfo(f[3]);
    m.mount_point = UnescapeMountinfo(f[4]);
    m.fstype = fstype;
    if (dash + 3 < f.size())
      for (auto& o : Split(f[dash + 3], ',')) m.options.insert(o);
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

std::string UnescapeMountinfo(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' &&
        s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
      out.push_back(static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

CgroupLayout ParseCgroupLayout(std::string_view mountinfo, std::string_view proc_cgroup,
                               const FileReader& read) {
  // /proc/self/cgroup: "hierarchy-id:controller,list:/path"; the v2 line is "0::/path".
  std::map<std::string, std::string> v1_paths;  // controller -> our path in its hierarchy
  std::optional<std::string> v2_path;
  std::istringstream in{std::string(proc_cgroup)};
  for (std::string line; std::getline(in, line);) {
    size_t a = line.find(':');
    if (a == std::string::npos) continue;
    size_t b = line.find(':', a + 1);
    if (b == std::string::npos) continue;
    std::string ids = line.substr(0, a), ctrls = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (ids == "0" && ctrls.empty()) {
      v2_path = path;
      continue;
    }
    for (auto& c : Split(ctrls, ',')) v1_paths[c] = path;
  }
  auto mounts = ParseCgroupMounts(mountinfo);

  // The v2 group (if any) and the controllers it offers.
  std::optional<ControllerPlace> v2_place;
  std::set<std::string> v2_controllers;
  if (v2_path) {
    for (auto& m : mounts) {
      if (m.fstype != "cgroup2") continue;
      auto rel = RelativeTo(m.root, *v2_path);
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
    auto p = v1_paths.find(ctl);
    if (p != v1_paths.end()) {
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

CgroupLayout DetectCgroupLayout() {
  auto mi = ReadFile("/proc/self/mountinfo");
  auto cg = ReadFile("/proc/self/cgroup");
  return ParseCgroupLayout(mi.ok() ? *mi : "", cg.ok() ? *cg : "",
                           [](const std::string& path) -> std::optional<std::string> {
                             auto r = ReadFile(path);
                             if (!r.ok()) return std::nullopt;
                             return *r;
                           });
}

}  // namespace lsb::native
