#include <gtest/gtest.h>

#include "base/io.h"
#include "base/mountinfo.h"

#include "runtime/native/cgroup_layout.h"

namespace lsb::native {
namespace {

// This workplace: memory/cpu/cpuacct/pids as v1 hierarchies, v2 at /sys/fs/cgroup/unified with
// only hugetlb; our memory group is nested.
constexpr const char* kHybridMountinfo =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
constexpr const char* kHybridCgroup =
    "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/839f\n2:cpuacct:/\n1:cpu:/\n0::/\n";

// A pure v2 host (systemd, unified hierarchy), our group a delegated scope.
constexpr const char* kV2Mountinfo =
    "25 21 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";
constexpr const char* kV2Cgroup = "0::/user.slice/user-1000.slice/session-3.scope\n";

// Classic Docker-era v1 with cpu,cpuacct co-mounted.
constexpr const char* kV1CoMountinfo =
    "30 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
    "31 25 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
    "32 25 0:28 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n";
constexpr const char* kV1CoCgroup = "4:pids:/a\n3:memory:/a\n2:cpu,cpuacct:/a\n";

FileReader Files(std::map<std::string, std::string> files) {
  return [files](const std::string& p) -> std::optional<std::string> {
    auto it = files.find(p);
    if (it == files.end()) return std::nullopt;
    return it->second;
  };
}

TEST(CgroupLayout, HybridV1ControllersWithNearlyEmptyV2) {
  auto l = ParseCgroupLayout(kHybridMountinfo, kHybridCgroup,
                             Files({{"/sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n"}}));
  EXPECT_EQ(l.Get("memory").version, CgroupVersion::kV1);
  EXPECT_EQ(l.Get("memory").dir(), "/sys/fs/cgroup/memory/process_api/839f");
  EXPECT_EQ(l.Get("pids").version, CgroupVersion::kV1);
  EXPECT_EQ(l.Get("pids").dir(), "/sys/fs/cgroup/pids");
  EXPECT_EQ(l.Get("cpu").dir(), "/sys/fs/cgroup/cpu");
  EXPECT_EQ(l.Get("cpuacct").version, CgroupVersion::kV1);
  EXPECT_EQ(l.Get("cpuacct").dir(), "/sys/fs/cgroup/cpuacct");
}

TEST(CgroupLayout, PureV2) {
  auto l = ParseCgroupLayout(
      kV2Mountinfo, kV2Cgroup,
      Files({{"/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope/cgroup.controllers",
              "cpuset cpu io memory pids\n"}}));
  for (const char* c : {"memory", "cpu", "pids", "cpuacct"}) {
    EXPECT_EQ(l.Get(c).version, CgroupVersion::kV2) << c;
    EXPECT_EQ(l.Get(c).dir(), "/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope") << c;
  }
}

TEST(CgroupLayout, V2WithoutAController) {
  auto l = ParseCgroupLayout(kV2Mountinfo, "0::/\n", Files({{"/sys/fs/cgroup/cgroup.controllers", "cpu pids\n"}}));
  EXPECT_EQ(l.Get("memory").version, CgroupVersion::kNone);
  EXPECT_NE(l.Get("memory").reason.find("does not offer the memory controller"), std::string::npos);
  EXPECT_EQ(l.Get("pids").version, CgroupVersion::kV2);
  EXPECT_EQ(l.Get("pids").dir(), "/sys/fs/cgroup");
}

TEST(CgroupLayout, V1CoMountedCpuCpuacct) {
  auto l = ParseCgroupLayout(kV1CoMountinfo, kV1CoCgroup, Files({}));
  EXPECT_EQ(l.Get("cpu").dir(), "/sys/fs/cgroup/cpu,cpuacct/a");
  EXPECT_EQ(l.Get("cpuacct").dir(), "/sys/fs/cgroup/cpu,cpuacct/a");
  EXPECT_EQ(l.Get("memory").dir(), "/sys/fs/cgroup/memory/a");
}

TEST(CgroupLayout, MountRootIsStrippedFromOurPath) {
  // A container that bind-mounts its own part of the hierarchy (no cgroup namespace).
  auto l = ParseCgroupLayout(
      "40 30 0:31 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n",
      "3:memory:/docker/abc/inner\n", Files({}));
  EXPECT_EQ(l.Get("memory").dir(), "/sys/fs/cgroup/memory/inner");
}

TEST(CgroupLayout, NothingMounted) {
  auto l = ParseCgroupLayout("", "", Files({}));
  EXPECT_EQ(l.Get("memory").version, CgroupVersion::kNone);
  EXPECT_FALSE(l.Get("memory").reason.empty());
  EXPECT_EQ(l.Get("bogus").version, CgroupVersion::kNone);
}

TEST(CgroupLayout, V1HierarchyNotVisible) {
  auto l = ParseCgroupLayout(
      "40 30 0:31 /other /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
      "3:memory:/mine\n", Files({}));
  EXPECT_EQ(l.Get("memory").version, CgroupVersion::kNone);
  EXPECT_NE(l.Get("memory").reason.find("not mounted"), std::string::npos);
}

TEST(CgroupLayout, UnescapesMountPoints) {
  EXPECT_EQ(UnescapeMountinfo("/mnt/a\\040b"), "/mnt/a b");
  EXPECT_EQ(UnescapeMountinfo("plain\\"), "plain\\");
}

TEST(CgroupLayout, LiveDetectionFindsMemoryAndPids) {
  auto l = DetectCgroupLayout();
  // Whatever this host has, every known controller is either placed or explained.
  for (const char* c : {"memory", "cpu", "cpuacct", "pids"}) {
    const auto& p = l.Get(c);
    if (p.version == CgroupVersion::kNone) EXPECT_FALSE(p.reason.empty()) << c;
    else EXPECT_FALSE(p.mount_point.empty()) << c;
  }
}

// --- the standard layout, confirmed without mountinfo

// A probe answering like the kernel would for the given mounts: each mount point a hierarchy root
// (inode 1) on its own device, `files` existing inside them.
struct FakeMounts {
  std::map<std::string, ProbedPath> paths;
  void Hierarchy(const std::string& mount_point, CgroupVersion v, uint64_t inode = kHierarchyRootInode) {
    paths[mount_point] = ProbedPath{v, 100 + paths.size(), inode};
  }
  void File(const std::string& path) { paths[path] = ProbedPath{CgroupVersion::kV1, 0, 99}; }
  MountProbe Probe() const {
    return [p = paths](const std::string& path) -> std::optional<ProbedPath> {
      auto it = p.find(path);
      if (it == p.end()) return std::nullopt;
      return it->second;
    };
  }
};

void ExpectSameLayout(const CgroupLayout& a, const CgroupLayout& b) {
  for (const char* c : {"memory", "cpu", "cpuacct", "pids"}) {
    EXPECT_EQ(a.Get(c).version, b.Get(c).version) << c;
    EXPECT_EQ(a.Get(c).mount_point, b.Get(c).mount_point) << c;
    EXPECT_EQ(a.Get(c).own_path, b.Get(c).own_path) << c;
    EXPECT_EQ(a.Get(c).reason, b.Get(c).reason) << c;
  }
}

FakeMounts HybridMounts() {
  FakeMounts m;
  m.Hierarchy("/sys/fs/cgroup", CgroupVersion::kNone);  // the tmpfs holding the mount points
  for (const char* c : {"cpu", "cpuacct", "memory", "pids", "systemd"})
    m.Hierarchy(std::string("/sys/fs/cgroup/") + c, CgroupVersion::kV1);
  m.Hierarchy("/sys/fs/cgroup/unified", CgroupVersion::kV2);
  m.File("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  m.File("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  m.File("/sys/fs/cgroup/cpuacct/cpuacct.usage");
  return m;
}

TEST(StandardCgroupLayout, HybridGivesWhatMountinfoGives) {
  auto files = Files({{"/sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n"}});
  auto fast = StandardCgroupLayout(kHybridCgroup, HybridMounts().Probe(), files);
  ASSERT_TRUE(fast.has_value());
  ExpectSameLayout(*fast, ParseCgroupLayout(kHybridMountinfo, kHybridCgroup, files));
  EXPECT_EQ(fast->Get("memory").dir(), "/sys/fs/cgroup/memory/process_api/839f");
}

TEST(StandardCgroupLayout, PureV2GivesWhatMountinfoGives) {
  FakeMounts m;
  m.Hierarchy("/sys/fs/cgroup", CgroupVersion::kV2);
  auto files = Files({{"/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope/cgroup.controllers",
                       "cpuset cpu io memory pids\n"}});
  auto fast = StandardCgroupLayout(kV2Cgroup, m.Probe(), files);
  ASSERT_TRUE(fast.has_value());
  ExpectSameLayout(*fast, ParseCgroupLayout(kV2Mountinfo, kV2Cgroup, files));
}

TEST(StandardCgroupLayout, CoMountedCpuCpuacctGivesWhatMountinfoGives) {
  FakeMounts m;
  for (const char* h : {"cpu,cpuacct", "memory", "pids"}) m.Hierarchy(std::string("/sys/fs/cgroup/") + h, CgroupVersion::kV1);
  m.File("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  m.File("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us");
  m.File("/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage");
  auto fast = StandardCgroupLayout(kV1CoCgroup, m.Probe(), Files({}));
  ASSERT_TRUE(fast.has_value());
  ExpectSameLayout(*fast, ParseCgroupLayout(kV1CoMountinfo, kV1CoCgroup, Files({})));
}

TEST(StandardCgroupLayout, AnyDoubtLeavesItToMountinfo) {
  auto files = Files({{"/sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n"}});
  {  // the memory mount shows a subtree (a container's bind), not the hierarchy's root
    FakeMounts m = HybridMounts();
    m.Hierarchy("/sys/fs/cgroup/memory", CgroupVersion::kV1, 7);
    EXPECT_FALSE(StandardCgroupLayout(kHybridCgroup, m.Probe(), files).has_value());
  }
  {  // not a cgroup file system at all
    FakeMounts m = HybridMounts();
    m.Hierarchy("/sys/fs/cgroup/pids", CgroupVersion::kNone);
    EXPECT_FALSE(StandardCgroupLayout(kHybridCgroup, m.Probe(), files).has_value());
  }
  {  // nothing at the standard place
    FakeMounts m = HybridMounts();
    m.paths.erase("/sys/fs/cgroup/cpu");
    EXPECT_FALSE(StandardCgroupLayout(kHybridCgroup, m.Probe(), files).has_value());
  }
  {  // two names for one hierarchy (same device)
    FakeMounts m = HybridMounts();
    m.paths["/sys/fs/cgroup/cpuacct"].device = m.paths["/sys/fs/cgroup/cpu"].device;
    EXPECT_FALSE(StandardCgroupLayout(kHybridCgroup, m.Probe(), files).has_value());
  }
  {  // the directory named memory does not hold the memory hierarchy
    FakeMounts m = HybridMounts();
    m.paths.erase("/sys/fs/cgroup/memory/memory.limit_in_bytes");
    EXPECT_FALSE(StandardCgroupLayout(kHybridCgroup, m.Probe(), files).has_value());
  }
  {  // a v2-only host whose v2 tree is not where expected
    FakeMounts m;
    EXPECT_FALSE(StandardCgroupLayout(kV2Cgroup, m.Probe(), Files({})).has_value());
  }
}

TEST(StandardCgroupLayout, LiveAgreesWithMountinfo) {
  auto read = LiveFileReader();
  auto cg = ReadFile("/proc/self/cgroup");
  auto mi = ReadFile("/proc/self/mountinfo");
  ASSERT_TRUE(cg.ok() && mi.ok());
  auto fast = StandardCgroupLayout(*cg, LiveMountProbe(), read);
  if (!fast) GTEST_SKIP() << "this host's cgroups are not in the standard layout";
  ExpectSameLayout(*fast, ParseCgroupLayout(*mi, *cg, read));
  ExpectSameLayout(DetectCgroupLayout(), *fast);
}

}  // namespace
}  // namespace lsb::native
