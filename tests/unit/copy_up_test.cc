// CopyUpFromLayers (runtime/native/copy_up.h): the file as the layer stack shows it, never through
// a symlink of a (hostile) layer, and nothing where a layer hides it.
#include "runtime/native/copy_up.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "base/io.h"
#include "base/unique_fd.h"

namespace lsb::native {
namespace {

class CopyUp : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lsb-copyup-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    for (const char* d : {"/low", "/high", "/upper", "/host"}) ASSERT_EQ(::mkdir((dir_ + d).c_str(), 0755), 0);
  }
  void TearDown() override { (void)!std::system(("rm -rf " + dir_).c_str()); }
  void File(const std::string& path, const std::string& text, mode_t mode = 0644) {
    for (size_t p = path.find('/', dir_.size() + 1); p != std::string::npos; p = path.find('/', p + 1))
      ::mkdir(path.substr(0, p).c_str(), 0755);
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
    ASSERT_TRUE(fd);
    ASSERT_TRUE(WriteAll(fd.get(), text).ok());
    ::fchmod(fd.get(), mode);
  }
  std::string Copied(const std::string& rel) {
    ::mkdir((dir_ + "/upper/var").c_str(), 0755);
    ::mkdir((dir_ + "/upper/var/lib").c_str(), 0755);
    ::mkdir((dir_ + "/upper/var/lib/dpkg").c_str(), 0755);
    ::mkdir((dir_ + "/upper/var/log").c_str(), 0755);
    UniqueFd upper(::open((dir_ + "/upper").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    auto st = CopyUpFromLayers({dir_ + "/low", dir_ + "/high"}, upper.get(), rel, ::getuid(), ::getgid());
    EXPECT_TRUE(st.ok()) << st.error().message;
    auto text = ReadFile(dir_ + "/upper/" + rel);
    return text.ok() ? *text : "<none>";
  }
  std::string dir_;
};

TEST_F(CopyUp, TheTopmostLayersFileWithItsMode) {
  File(dir_ + "/low/var/lib/dpkg/status", "old");
  File(dir_ + "/high/var/lib/dpkg/status", "new", 0640);
  File(dir_ + "/low/var/lib/dpkg/lock", "");
  EXPECT_EQ(Copied("var/lib/dpkg/status"), "new");
  struct stat st {};
  ASSERT_EQ(::stat((dir_ + "/upper/var/lib/dpkg/status").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_EQ(Copied("var/lib/dpkg/lock"), "");
  EXPECT_EQ(Copied("var/lib/dpkg/absent"), "<none>");
}

TEST_F(CopyUp, NeverThroughALayersSymlink) {
  File(dir_ + "/host/dpkg.log", "a host secret");
  ASSERT_EQ(::mkdir((dir_ + "/high/var").c_str(), 0755), 0);
  ASSERT_EQ(::symlink((dir_ + "/host").c_str(), (dir_ + "/high/var/log").c_str()), 0);
  File(dir_ + "/low/var/log/dpkg.log", "hidden by the symlink above");
  EXPECT_EQ(Copied("var/log/dpkg.log"), "<none>");
  ASSERT_EQ(::mkdir((dir_ + "/high/var/lib").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((dir_ + "/high/var/lib/dpkg").c_str(), 0755), 0);
  ASSERT_EQ(::symlink((dir_ + "/host/dpkg.log").c_str(), (dir_ + "/high/var/lib/dpkg/status").c_str()), 0);
  EXPECT_EQ(Copied("var/lib/dpkg/status"), "<none>");
}

TEST_F(CopyUp, NothingBelowAnOpaqueDirectory) {
  File(dir_ + "/low/var/lib/dpkg/status", "deleted above");
  ASSERT_EQ(::system(("mkdir -p " + dir_ + "/high/var/lib/dpkg").c_str()), 0);
  if (::setxattr((dir_ + "/high/var/lib/dpkg").c_str(), "user.overlay.opaque", "y", 1, 0) != 0)
    GTEST_SKIP() << "no user xattrs on /tmp";
  EXPECT_EQ(Copied("var/lib/dpkg/status"), "<none>");
}

}  // namespace
}  // namespace lsb::native
