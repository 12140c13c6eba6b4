// Issue 37 item 3: container.workdir is checked against the image's root and the policy's tmpfs and
// mounts before any box.
#include "runtime/native/workdir_check.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "policy_parse_helpers.h"

namespace lsb::native {
namespace {

namespace fs = std::filesystem;

class WorkdirCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lsb-workdir-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Mk(const std::string& rel) {
    fs::create_directories(dir_ + "/" + rel);
    return dir_ + "/" + rel;
  }
  static Policy WithWorkdir(const std::string& workdir, const std::string& extra = "") {
    return MustParse("version: \"1.0\"\nname: w\ncontainer:\n  image: host\n  workdir: " + workdir + "\n" + extra);
  }
  std::string dir_;
};

BoxRoot Rootfs(const std::string& dir) { return BoxRoot{dir, std::nullopt, false, "rootfs " + dir}; }

TEST_F(WorkdirCheck, MissingInARootfsIsRefusedNamingThePathAndTheFix) {
  Mk("root/usr/bin");
  Mk("root/srv/app");
  Policy ok = WithWorkdir("/srv/app");
  EXPECT_EQ(CheckWorkdir(ok, Rootfs(dir_ + "/root")).verdict, WorkdirFinding::Verdict::kFound);
  // container.build may make it: not known before the build, so said, not refused.
  Policy built = MustParse("version: \"1.0\"\nname: w\ncontainer:\n  image: python:3.12-slim\n  workdir: /work\n"
                           "  build:\n    pip: [\"pytest\"]\n");
  EXPECT_EQ(CheckWorkdir(built, Rootfs(dir_ + "/root")).verdict, WorkdirFinding::Verdict::kNotInspected);
  Policy bad = WithWorkdir("/work");
  WorkdirFinding f = CheckWorkdir(bad, Rootfs(dir_ + "/root"));
  ASSERT_EQ(f.verdict, WorkdirFinding::Verdict::kMissing);
  EXPECT_NE(f.message.find("container.workdir: /work does not exist"), std::string::npos) << f.message;
  EXPECT_NE(f.hint.find("mkdir -p /work"), std::string::npos) << f.hint;
  EXPECT_NE(f.hint.find("container.tmpfs"), std::string::npos) << f.hint;
}

TEST_F(WorkdirCheck, LayersHonourWhiteoutsAndSymlinks) {
  std::string low = Mk("low"), high = Mk("high");
  Mk("low/app/data");
  Mk("low/gone");
  Mk("low/real/dir");
  std::ofstream(high + "/.wh.gone").put('\n');
  fs::create_directory_symlink("real", high + "/link");    // relative, inside the root
  fs::create_directory_symlink("/real", high + "/abs");    // absolute: the box's root, not the host's
  std::vector<std::string> top_first = {high, low};
  EXPECT_TRUE(IsDirectoryInLayers(top_first, "/app/data"));
  EXPECT_FALSE(IsDirectoryInLayers(top_first, "/gone"));
  EXPECT_TRUE(IsDirectoryInLayers(top_first, "/link/dir"));
  EXPECT_TRUE(IsDirectoryInLayers(top_first, "/abs/dir"));
  EXPECT_FALSE(IsDirectoryInLayers(top_first, "/nowhere"));
  Mk("high/app");
  std::ofstream(high + "/app/.wh..wh..opq").put('\n');  // an opaque directory hides the lower one's files
  EXPECT_FALSE(IsDirectoryInLayers(top_first, "/app/data"));
}

TEST_F(WorkdirCheck, TmpfsAndMountsOfThePolicy) {
  BoxRoot host{"host", std::nullopt, false, "host"};
  // The tmpfs itself, and the directories init makes on the way to it.
  EXPECT_EQ(CheckWorkdir(WithWorkdir("/work", "  tmpfs:\n    /work: \"size=16M\"\n"), host).verdict,
            WorkdirFinding::Verdict::kFound);
  EXPECT_EQ(CheckWorkdir(WithWorkdir("/home", "  tmpfs:\n    /home/sandbox: \"size=16M\"\n"), host).verdict,
            WorkdirFinding::Verdict::kFound);
  // Below a tmpfs's top nothing exists: it starts empty.
  WorkdirFinding inside = CheckWorkdir(WithWorkdir("/tmp/work", "  tmpfs:\n    /tmp: \"size=16M\"\n"), host);
  ASSERT_EQ(inside.verdict, WorkdirFinding::Verdict::kMissing);
  EXPECT_NE(inside.message.find("inside the tmpfs /tmp"), std::string::npos) << inside.message;
  // The host's system directories exist; /home is not part of the image 'host'.
  EXPECT_EQ(CheckWorkdir(WithWorkdir("/usr/lib"), host).verdict, WorkdirFinding::Verdict::kFound);
  EXPECT_EQ(CheckWorkdir(WithWorkdir("/home/nobody"), host).verdict, WorkdirFinding::Verdict::kMissing);
  // Inside a mount: the host source decides.
  std::string src = Mk("src/sub");
  std::string mounts = "  mounts:\n    - {source: " + dir_ + "/src, target: /data}\n";
  EXPECT_EQ(CheckWorkdir(WithWorkdir("/data/sub", mounts), host).verdict, WorkdirFinding::Verdict::kFound);
  WorkdirFinding absent = CheckWorkdir(WithWorkdir("/data/nope", mounts), host);
  ASSERT_EQ(absent.verdict, WorkdirFinding::Verdict::kMissing);
  EXPECT_NE(absent.message.find(dir_ + "/src/nope"), std::string::npos) << absent.message;
}

TEST_F(WorkdirCheck, AnImageThatCannotBeInspectedIsSaidSoNotGuessed) {
  Policy p = WithWorkdir("/app");
  WorkdirFinding f = CheckWorkdir(p, Result<BoxRoot>(Error{"not in the image store"}));
  EXPECT_EQ(f.verdict, WorkdirFinding::Verdict::kNotInspected);
  EXPECT_NE(f.message.find("cannot be inspected here: not in the image store"), std::string::npos) << f.message;
  BoxRoot pending{"image", std::nullopt, true, "pulled later"};
  EXPECT_EQ(CheckWorkdir(p, pending).verdict, WorkdirFinding::Verdict::kNotInspected);
  // The default workdir is not the policy's choice: not checked.
  Policy plain = MustParse("version: \"1.0\"\nname: w\ncontainer:\n  image: host\n");
  EXPECT_EQ(CheckWorkdir(plain, Result<BoxRoot>(Error{"x"})).verdict, WorkdirFinding::Verdict::kFound);
}

}  // namespace
}  // namespace lsb::native
