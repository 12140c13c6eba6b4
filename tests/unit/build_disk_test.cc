// build.disk's filesystem (runtime/native/build_disk.h): a write past the bound gets ENOSPC, the
// image file holds at most the bound, and nothing is left mounted or on disk once it is gone.
// Needs root (a loop device) and mke2fs: skipped otherwise.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "base/io.h"
#include "runtime/native/build_disk.h"

namespace lsb::native {
namespace {

bool Mounted(const std::string& path) {
  std::ifstream in("/proc/self/mounts");
  std::string line;
  while (std::getline(in, line))
    if (line.find(" " + path + " ") != std::string::npos) return true;
  return false;
}

TEST(BuildDisk, AWritePastTheBoundFailsAndNothingIsLeft) {
  if (::geteuid() != 0 || ::access("/dev/loop-control", R_OK | W_OK) != 0) GTEST_SKIP() << "needs root and loop devices";
  char tmpl[] = "/tmp/lsb-build-disk-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::string root;
  {
    auto disk = BuildDisk::Create(dir, kMinBuildDiskBytes, 100000, 100000);
    ASSERT_TRUE(disk.ok()) << disk.error().message;
    root = (*disk)->root();
    EXPECT_TRUE(Mounted(root));
    struct stat st {};
    ASSERT_EQ(::stat(root.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 100000u);  // the box's root owns it
    EXPECT_FALSE((*disk)->Full());
    int fd = ::open((root + "/big").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    std::string chunk(1 << 20, 'x');
    int err = 0;
    for (int i = 0; i < 128 && err == 0; ++i)
      if (::write(fd, chunk.data(), chunk.size()) < static_cast<ssize_t>(chunk.size())) err = errno ? errno : ENOSPC;
    ::close(fd);
    EXPECT_EQ(err, ENOSPC);
    EXPECT_TRUE((*disk)->Full());
    struct stat img {};
    ASSERT_EQ(::stat((dir + "/disk.img").c_str(), &img), 0);
    EXPECT_LE(static_cast<uint64_t>(img.st_blocks) * 512, kMinBuildDiskBytes);
  }
  EXPECT_FALSE(Mounted(root));
  EXPECT_NE(::access((dir + "/disk.img").c_str(), F_OK), 0);
  EXPECT_NE(::access(root.c_str(), F_OK), 0);
  ::rmdir(dir.c_str());
}

TEST(BuildDisk, BelowTheMinimumIsRefused) {
  auto disk = BuildDisk::Create("/nonexistent", 1 << 20, 0, 0);
  ASSERT_FALSE(disk.ok());
  EXPECT_NE(disk.error().message.find("build.disk"), std::string::npos);
}

}  // namespace
}  // namespace lsb::native
