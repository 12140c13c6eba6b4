// container.mounts: the loader's checks of the shape and targets, and the allowlist of host roots
// (runtime/mount_roots.h) against real paths: symlinks and '..' resolved before the check.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "policy_parse_helpers.h"
#include "runtime/mount_roots.h"

namespace lsb {
namespace {

std::string WithMounts(const std::string& mounts) {
  return "version: \"1.0\"\nname: m\ncontainer:\n  image: host\n  tmpfs:\n    /tmp: \"size=16M\"\n  mounts:\n" + mounts;
}

TEST(HostMountsPolicy, ParsesModesAndSizes) {
  Policy p = MustParse(WithMounts("    - {source: /srv/a, target: /workspace, mode: overlay, size: 32M}\n"
                                  "    - {source: /srv/b, target: /data}\n"));
  ASSERT_EQ(p.mounts.size(), 2u);
  EXPECT_EQ(p.mounts[0].mode, "overlay");
  EXPECT_EQ(p.mounts[0].size_bytes, 32ull << 20);
  EXPECT_EQ(p.mounts[1].mode, "ro");
  EXPECT_EQ(p.mounts[1].target, "/data");
}

TEST(HostMountsPolicy, RefusesBadShapesAndTargetsTheSandboxOwns) {
  EXPECT_NE(ParseError(WithMounts("    - {source: srv/a, target: /w}\n")).find("not an absolute path"), std::string::npos);
  EXPECT_NE(ParseError(WithMounts("    - {source: /srv/../etc, target: /w}\n")).find("container.mounts[0].source"), std::string::npos);
  EXPECT_NE(ParseError(WithMounts("    - {source: /srv/a, target: /w, mode: rw}\n")).find("unknown mode 'rw'"), std::string::npos);
  EXPECT_NE(ParseError(WithMounts("    - {source: /srv/a}\n")).find("needs both source and target"), std::string::npos);
  EXPECT_NE(ParseError(WithMounts("    - {source: /srv/a, target: /w, size: 1k}\n")).find("not a size"), std::string::npos);
  EXPECT_NE(ParseError(WithMounts("    - {source: /srv/a, target: /w, owner: me}\n")).find("owner"), std::string::npos);
  for (const char* t : {"/", "/proc", "/proc/1", "/sys/fs", "/dev", "/dev/shm", "/run/job", "/run/job/x", "/run"})
    EXPECT_NE(ParseError(WithMounts(std::string("    - {source: /srv/a, target: ") + t + "}\n")).find("builds itself"),
              std::string::npos)
        << t;
  EXPECT_NE(ParseError(WithMounts("    - {source: /srv/a, target: /w}\n    - {source: /srv/b, target: /w/x}\n"))
                .find("inside (or holds) another mount"),
            std::string::npos);
  EXPECT_NE(ParseError(WithMounts("    {source: /srv/a, target: /w}\n")).find("expected a list"), std::string::npos);
}

class MountRoots : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lsb-mount-roots-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::filesystem::create_directories(dir_ + "/root/proj/sub");
    std::filesystem::create_directories(dir_ + "/outside");
    std::filesystem::create_symlink(dir_ + "/outside", dir_ + "/root/link-out");
    std::filesystem::create_symlink(dir_ + "/root/proj", dir_ + "/link-in");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  Result<std::vector<protocol::MountSpec>> Check(const std::string& source, std::vector<std::string> roots) {
    return ResolveHostMounts({protocol::MountSpec{source, "/w", "ro", 0, -1}}, roots);
  }
  std::string dir_;
};

TEST_F(MountRoots, AllowsOnlyRealPathsUnderARoot) {
  auto ok = Check(dir_ + "/root/proj/sub", {dir_ + "/root"});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ((*ok)[0].source, dir_ + "/root/proj/sub");
  // A symlink outside the roots that leads in: its real path is what counts.
  auto via = Check(dir_ + "/link-in", {dir_ + "/root"});
  ASSERT_TRUE(via.ok()) << via.error().message;
  EXPECT_EQ((*via)[0].source, dir_ + "/root/proj");
  EXPECT_TRUE(Check(dir_ + "/root", {dir_ + "/root"}).ok());
}

TEST_F(MountRoots, RefusesEscapesNamingTheSourceAndTheFlag) {
  for (const std::string& source : {dir_ + "/outside", dir_ + "/root/link-out", dir_ + "/root/../outside",
                                    dir_ + "/root/proj/../../outside", dir_ + "/rootx"}) {
    auto r = Check(source, {dir_ + "/root"});
    ASSERT_FALSE(r.ok()) << source;
    EXPECT_NE(r.error().message.find(source), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().code == ErrorCode::kPermissionDenied || r.error().message.find("No such file") != std::string::npos, true)
        << r.error().message;
  }
  auto none = Check(dir_ + "/root/proj", {});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("--mount-root"), std::string::npos);
  auto out = Check(dir_ + "/root/link-out", {dir_ + "/root"});
  EXPECT_NE(out.error().message.find("really " + dir_ + "/outside"), std::string::npos) << out.error().message;
  EXPECT_NE(out.error().message.find("--mount-root"), std::string::npos);
  // A prefix of a name is not a parent: /x/root does not allow /x/rootx.
  std::filesystem::create_directories(dir_ + "/rootx");
  EXPECT_FALSE(Check(dir_ + "/rootx", {dir_ + "/root"}).ok());
  // A file is no directory; a root that does not exist is an error too.
  std::filesystem::create_directories(dir_ + "/root/f");
  EXPECT_FALSE(Check(dir_ + "/root/proj", {dir_ + "/missing"}).ok());
}

}  // namespace
}  // namespace lsb
