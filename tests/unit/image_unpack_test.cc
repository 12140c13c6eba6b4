// Layer unpacking against hostile archives (src/image/layer_unpack.h): each test is one attack,
// its archive written byte by byte here.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "base/unique_fd.h"
#include "image/layer_unpack.h"
#include "image_test_util.h"

namespace lsb::image {
namespace {

using testing::DigestOf;
using testing::Gzip;
using testing::ScratchDir;
using testing::TarBuilder;

class UnpackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    layer_ = scratch_.path() + "/layer";
    ASSERT_EQ(::mkdir(layer_.c_str(), 0755), 0);
    dir_.reset(::open(layer_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  }
  Result<LayerStats> Unpack(const std::string& blob) {
    std::string path = scratch_.path() + "/blob";
    testing::WriteTo(path, blob);
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    return UnpackLayer(fd.get(), dir_.get(), limits_);
  }
  bool Exists(const std::string& rel) {
    struct stat st {};
    return ::lstat((layer_ + "/" + rel).c_str(), &st) == 0;
  }
  mode_t ModeOf(const std::string& rel) {
    struct stat st {};
    EXPECT_EQ(::lstat((layer_ + "/" + rel).c_str(), &st), 0) << rel;
    return st.st_mode;
  }

  ScratchDir scratch_;
  std::string layer_;
  UniqueFd dir_;
  UnpackLimits limits_;
};

TEST_F(UnpackTest, FilesDirsSymlinksAndHardlinksUnpackAndDiffIdIsTheTarsSha256) {
  std::string tar = TarBuilder()
                        .Dir("usr/")
                        .Dir("usr/bin/")
                        .File("usr/bin/python3.11", "#!fake\n", 0755)
                        .Symlink("usr/bin/python3", "python3.11")
                        .Hardlink("usr/bin/python", "usr/bin/python3.11")
                        .Symlink("etc-link", "/etc")  // may point anywhere: only ever resolved in a box
                        .Finish();
  auto stats = Unpack(Gzip(tar));
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_EQ(stats->diff_id, DigestOf(tar));
  EXPECT_EQ(stats->compression, Compression::kGzip);
  EXPECT_EQ(testing::ReadFrom(layer_ + "/usr/bin/python"), "#!fake\n");
  EXPECT_TRUE(S_ISLNK(ModeOf("usr/bin/python3")));
  EXPECT_TRUE(S_ISLNK(ModeOf("etc-link")));
  EXPECT_EQ(ModeOf("usr/bin/python3.11") & 07777, 0755u);
  struct stat st {};
  ASSERT_EQ(::stat((layer_ + "/usr/bin/python3.11").c_str(), &st), 0);
  EXPECT_EQ(st.st_mtime, 1700000000);  // kept, so .pyc files stay valid
  EXPECT_EQ(st.st_nlink, 2u);
}

TEST_F(UnpackTest, ZstdAndPlainLayersUnpackToTheSameDiffId) {
  std::string tar = TarBuilder().File("a", "zstd content").Finish();
  auto z = Unpack(testing::Zstd(tar));
  ASSERT_TRUE(z.ok()) << z.error().message;
  EXPECT_EQ(z->compression, Compression::kZstd);
  EXPECT_EQ(z->diff_id, DigestOf(tar));
  EXPECT_EQ(testing::ReadFrom(layer_ + "/a"), "zstd content");
}

TEST_F(UnpackTest, AbsolutePathIsRefused) {
  auto r = Unpack(TarBuilder().File("/etc/evil", "x").Finish());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().IsPermissionDenied()) << r.error().message;
  EXPECT_NE(r.error().message.find("absolute"), std::string::npos);
}

TEST_F(UnpackTest, DotDotEscapeIsRefused) {
  auto r = Unpack(TarBuilder().File("a/../../escaped", "x").Finish());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("'..'"), std::string::npos) << r.error().message;
  struct stat st {};
  EXPECT_NE(::stat((scratch_.path() + "/escaped").c_str(), &st), 0);
}

TEST_F(UnpackTest, SymlinkThenWriteThroughIsRefused) {
  std::string outside = scratch_.path() + "/outside";
  ASSERT_EQ(::mkdir(outside.c_str(), 0755), 0);
  auto r = Unpack(TarBuilder().Symlink("d", outside).File("d/planted", "x").Finish());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().IsPermissionDenied());
  EXPECT_NE(r.error().message.find("symlink"), std::string::npos) << r.error().message;
  struct stat st {};
  EXPECT_NE(::stat((outside + "/planted").c_str(), &st), 0);
}

TEST_F(UnpackTest, RelativeSymlinkThenWriteThroughIsRefused) {
  auto r = Unpack(TarBuilder().Dir("x/").Symlink("x/up", "..").File("x/up/planted", "x").Finish());
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(Exists("planted"));
}

TEST_F(UnpackTest, HardlinkEscapeIsRefused) {
  auto r = Unpack(TarBuilder().Hardlink("passwd", "../../../../etc/passwd").Finish());
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(Exists("passwd"));
  // Absolute targets too, and a target this layer never extracted.
  EXPECT_FALSE(Unpack(TarBuilder().Hardlink("p2", "/etc/passwd").Finish()).ok());
  auto never = Unpack(TarBuilder().Hardlink("p3", "not/extracted").Finish());
  ASSERT_FALSE(never.ok());
  EXPECT_NE(never.error().message.find("not a regular file extracted earlier"), std::string::npos);
}

TEST_F(UnpackTest, HardlinkToASymlinkIsRefused) {
  auto r = Unpack(TarBuilder().Symlink("s", "/etc/shadow").Hardlink("h", "s").Finish());
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(Exists("h"));
}

TEST_F(UnpackTest, DeviceNodeAndFifoAreSkipped) {
  auto r = Unpack(TarBuilder()
                      .Entry("dev/mem", '3', "", 0600, "", UINT64_MAX, 1, 1)
                      .Entry("dev/sda", '4', "", 0600, "", UINT64_MAX, 8, 0)
                      .Entry("fifo", '6')
                      .Entry("dev/fake-whiteout", '3', "", 0600, "", UINT64_MAX, 0, 0)
                      .File("ok", "y")
                      .Finish());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->skipped_special, 4u);
  EXPECT_FALSE(Exists("dev/mem"));
  EXPECT_FALSE(Exists("dev/sda"));
  EXPECT_FALSE(Exists("fifo"));
  EXPECT_FALSE(Exists("dev/fake-whiteout"));
  EXPECT_TRUE(Exists("ok"));
}

TEST_F(UnpackTest, SetuidSetgidStickyAndGroupWriteBitsAreStripped) {
  auto r = Unpack(TarBuilder().File("su", "x", 04755).File("sg", "x", 02775).Dir("tmp/", 01777).Finish());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(ModeOf("su") & 07777, 0755u);
  EXPECT_EQ(ModeOf("sg") & 07777, 0755u);
  EXPECT_EQ(ModeOf("tmp") & 07777, 0755u);
}

TEST_F(UnpackTest, HugeSizeClaimIsRefusedBeforeWriting) {
  limits_.max_layer_bytes = 1 << 20;
  auto r = Unpack(TarBuilder().Entry("big", '0', "", 0644, "", 1ull << 40).Finish());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kResourceExhausted) << r.error().message;
  EXPECT_FALSE(Exists("big"));
}

TEST_F(UnpackTest, SparseEntryIsRefused) {
  EXPECT_FALSE(Unpack(TarBuilder().Entry("sparse", 'S', "").Finish()).ok());
  EXPECT_FALSE(Unpack(TarBuilder().Pax({{"GNU.sparse.major", "1"}}).File("s2", "x").Finish()).ok());
}

TEST_F(UnpackTest, TarBombIsStoppedByTheExpansionRatio) {
  limits_.ratio_grace_bytes = 1 << 20;
  limits_.max_expansion_ratio = 50;
  std::string tar = TarBuilder().File("zeros", std::string(32 << 20, '\0')).Finish();
  std::string gz = Gzip(tar);
  ASSERT_LT(gz.size() * 200, tar.size());  // the bomb really is >200:1
  auto r = Unpack(gz);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("bomb"), std::string::npos) << r.error().message;
}

TEST_F(UnpackTest, LayerBytesBoundStopsAStreamThatKeepsGoing) {
  limits_.max_layer_bytes = 64 << 10;
  auto r = Unpack(TarBuilder().File("a", std::string(100 << 10, 'x')).Finish());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kResourceExhausted);
}

TEST_F(UnpackTest, TooManyEntriesIsRefused) {
  limits_.max_entries = 10;
  TarBuilder b;
  for (int i = 0; i < 11; ++i) b.File("f" + std::to_string(i), "");
  auto r = Unpack(b.Finish());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("more than 10 entries"), std::string::npos) << r.error().message;
}

TEST_F(UnpackTest, DeepNestingIsRefused) {
  std::string deep;
  for (int i = 0; i < 300; ++i) deep += "d/";
  auto r = Unpack(TarBuilder().Pax({{"path", deep + "f"}}).File("placeholder", "x").Finish());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("nested deeper"), std::string::npos) << r.error().message;
}

TEST_F(UnpackTest, OverlongPathIsRefused) {
  auto r = Unpack(TarBuilder().Pax({{"path", std::string(5000, 'a')}}).File("p", "x").Finish());
  ASSERT_FALSE(r.ok());
}

TEST_F(UnpackTest, TruncatedArchiveIsRefused) {
  std::string tar = TarBuilder().File("a", std::string(2000, 'x')).Unterminated();
  EXPECT_FALSE(Unpack(tar.substr(0, 1200)).ok());  // cut inside the data
  EXPECT_FALSE(Unpack(tar).ok());                  // no end-of-archive marker
  std::string gz = Gzip(TarBuilder().File("a", "x").Finish());
  EXPECT_FALSE(Unpack(gz.substr(0, gz.size() - 8)).ok());  // gzip stream cut short
}

TEST_F(UnpackTest, CorruptHeaderChecksumIsRefused) {
  std::string tar = TarBuilder().File("a", "x").Finish();
  tar[0] = 'b';
  auto r = Unpack(tar);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("checksum"), std::string::npos);
}

TEST_F(UnpackTest, PaxLongNameAndLinkpathAndGnuLongNameApply) {
  std::string long_dir(150, 'p');
  std::string tar = TarBuilder()
                        .Pax({{"path", long_dir + "/file"}})
                        .File("short", "pax")
                        .Entry("././@LongLink", 'L', std::string(120, 'g') + '\0')
                        .File("ignored", "gnu")
                        .Pax({{"linkpath", long_dir + "/file"}})
                        .Symlink("ln", "ignored")
                        .Finish();
  auto r = Unpack(tar);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(testing::ReadFrom(layer_ + "/" + long_dir + "/file"), "pax");
  EXPECT_EQ(testing::ReadFrom(layer_ + "/" + std::string(120, 'g')), "gnu");
  char buf[512] = {};
  ASSERT_GT(::readlink((layer_ + "/ln").c_str(), buf, sizeof buf), 0);
  EXPECT_EQ(std::string(buf), long_dir + "/file");
}

TEST_F(UnpackTest, WhiteoutBecomesA00CharDeviceAndOpaqueMarkerAnXattr) {
  auto r = Unpack(TarBuilder().Dir("etc/").File("etc/.wh.gone", "").Dir("opq/").File("opq/.wh..wh..opq", "").Finish());
  ASSERT_TRUE(r.ok()) << r.error().message;
  struct stat st {};
  ASSERT_EQ(::lstat((layer_ + "/etc/gone").c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(0, 0));
  EXPECT_FALSE(Exists("etc/.wh.gone"));
  EXPECT_FALSE(Exists("opq/.wh..wh..opq"));
  char v[4] = {};
  EXPECT_EQ(::getxattr((layer_ + "/opq").c_str(), "user.overlay.opaque", v, sizeof v), 1);
  EXPECT_EQ(v[0], 'y');
}

// The whiteouts above, stacked by a real overlayfs in a user + mount namespace as the native
// backend mounts image layers (lowerdir=upper:lower, userxattr).
TEST_F(UnpackTest, WhiteoutsHideLowerFilesInARealOverlayInAUserNamespace) {
  if (::system("command -v unshare >/dev/null") != 0) GTEST_SKIP() << "no unshare(1)";
  std::string lower = scratch_.path() + "/lower", upper = scratch_.path() + "/upper", mnt = scratch_.path() + "/mnt";
  for (const auto& d : {lower, upper, mnt}) ASSERT_EQ(::mkdir(d.c_str(), 0755), 0);
  auto unpack_into = [&](const std::string& dir, const std::string& tar) {
    UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY));
    std::string path = scratch_.path() + "/b";
    testing::WriteTo(path, tar);
    UniqueFd blob(::open(path.c_str(), O_RDONLY));
    return UnpackLayer(blob.get(), fd.get(), limits_);
  };
  ASSERT_TRUE(unpack_into(lower, TarBuilder().File("gone", "1").Dir("opq/").File("opq/old", "2").File("kept", "3").Finish()).ok());
  ASSERT_TRUE(unpack_into(upper, TarBuilder().File(".wh.gone", "").Dir("opq/").File("opq/.wh..wh..opq", "").File("opq/new", "4").Finish()).ok());
  std::string out = scratch_.path() + "/ls.txt";
  std::string cmd = "unshare -Urm sh -c 'mount -t overlay overlay -o lowerdir=" + upper + ":" + lower + ",userxattr " +
                    mnt + " && ls -A " + mnt + " " + mnt + "/opq' > " + out + " 2>&1";
  int rc = ::system(cmd.c_str());
  std::string listing = testing::ReadFrom(out);
  if (rc != 0 && listing.find("ermission") != std::string::npos) GTEST_SKIP() << "no user namespaces: " << listing;
  ASSERT_EQ(rc, 0) << listing;
  EXPECT_EQ(listing.find("gone"), std::string::npos) << listing;
  EXPECT_EQ(listing.find("old"), std::string::npos) << listing;
  EXPECT_NE(listing.find("kept"), std::string::npos) << listing;
  EXPECT_NE(listing.find("new"), std::string::npos) << listing;
}

TEST_F(UnpackTest, LaterEntryReplacesEarlierOneAndDirectoryListedTwiceIsKept) {
  auto r = Unpack(TarBuilder().File("a", "old").File("a", "new").Dir("d/").File("d/x", "1").Dir("d/").Finish());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(testing::ReadFrom(layer_ + "/a"), "new");
  EXPECT_TRUE(Exists("d/x"));
}

}  // namespace
}  // namespace lsb::image
