// base/mountinfo.h: the one mountinfo parser of the host (cgroup layout) and of init (a mount's
// options under gVisor).
#include <gtest/gtest.h>

#include "base/mountinfo.h"

namespace lsb {
namespace {

constexpr const char* kMountinfo =
    "22 1 8:1 / / ro,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "40 22 0:35 / /tmp/a\\040b rw,nosuid,nodev,noexec - tmpfs tmpfs rw,size=16384k\n"
    "41 22 0:36 / /run/job rw,nosuid master:3 propagate_from:1 - tmpfs tmpfs rw\n"
    "42 22 0:37 /box /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
    "43 41 0:38 / /run/job ro,noexec - tmpfs tmpfs rw\n"
    "not a mountinfo line\n";

TEST(Mountinfo, ParsesFieldsAndUnescapesOctalSpaces) {
  auto m = ParseMountinfo(kMountinfo);
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[1].mount_point, "/tmp/a b");
  EXPECT_EQ(m[1].fstype, "tmpfs");
  EXPECT_EQ(m[1].mount_options, (std::vector<std::string>{"rw", "nosuid", "nodev", "noexec"}));
  EXPECT_EQ(m[2].fstype, "tmpfs");  // after the optional fields
  EXPECT_EQ(m[3].root, "/box");
  EXPECT_EQ(m[3].super_options, (std::vector<std::string>{"rw", "memory"}));
  EXPECT_EQ(UnescapeMountinfo("a\\134b\\011c"), "a\\b\tc");
}

TEST(Mountinfo, AMountPointWithASpaceIsFoundByItsRealPath) {
  auto m = ParseMountinfo(kMountinfo);
  EXPECT_TRUE(MountHasOption(m, "/tmp/a b", "noexec"));
  EXPECT_FALSE(MountHasOption(m, "/tmp/a\\040b", "noexec"));  // the escaped text is not a path
}

TEST(Mountinfo, TheLastMountAtAPathIsTheOneThatCounts) {
  auto m = ParseMountinfo(kMountinfo);
  EXPECT_TRUE(MountHasOption(m, "/run/job", "noexec"));  // 43 covers 41
  EXPECT_TRUE(MountHasOption(m, "/", "ro"));
  EXPECT_FALSE(MountHasOption(m, "/", "relatime,ro"));  // whole options only
  EXPECT_FALSE(MountHasOption(m, "/nothing", "ro"));
}

}  // namespace
}  // namespace lsb
