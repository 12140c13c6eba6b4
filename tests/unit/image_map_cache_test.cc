#include "runtime/image_map_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace lsb {
namespace {

class ImageMapCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lsb-image-cache-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    file_ = dir_ + "/images.yaml";
  }
  void TearDown() override {
    ::unlink(file_.c_str());
    ::rmdir(dir_.c_str());
  }
  void Write(const std::string& text) {
    // A new file each time (rename), as editors and config tools replace a file.
    std::string tmp = file_ + ".new";
    std::ofstream(tmp) << text;
    ASSERT_EQ(::rename(tmp.c_str(), file_.c_str()), 0);
  }
  std::string dir_, file_;
};

TEST_F(ImageMapCacheTest, ParsesOnceWhileTheFileStaysTheSame) {
  Write("images:\n  \"a:1\": host\n");
  ImageMapCache cache(file_);
  for (int i = 0; i < 5; ++i) {
    auto m = cache.Get();
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_EQ(*m->Resolve("a:1"), "host");
  }
  EXPECT_EQ(cache.parses(), 1u);
}

TEST_F(ImageMapCacheTest, AnEditReachesTheNextGet) {
  Write("images:\n  \"a:1\": host\n");
  ImageMapCache cache(file_);
  ASSERT_TRUE(cache.Get().ok());
  Write("images:\n  \"a:1\": host\n  \"b:2\": host\n");
  auto m = cache.Get();
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->Resolve("b:2").ok());
  EXPECT_EQ(cache.parses(), 2u);
}

TEST_F(ImageMapCacheTest, ABrokenFileIsAnErrorEachTimeAndItsFixIsSeen) {
  Write("images:\n  a: \"relative dir!\"\n");  // no path, no image reference ("relative" would be an alias)
  ImageMapCache cache(file_);
  EXPECT_FALSE(cache.Get().ok());
  EXPECT_FALSE(cache.Get().ok());
  EXPECT_EQ(cache.parses(), 2u);  // errors are not kept
  Write("images:\n  a: host\n");
  EXPECT_TRUE(cache.Get().ok());
}

TEST_F(ImageMapCacheTest, AMissingExplicitFileIsAnError) {
  ImageMapCache cache(file_);  // never written
  auto m = cache.Get();
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find(file_), std::string::npos);
}

}  // namespace
}  // namespace lsb
