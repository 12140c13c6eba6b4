#include <gtest/gtest.h>

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

}  // namespace
}  // namespace lsb::native
