// init's half of matplotlib's font list (init/font_cache.h): what it writes, where, with which
// modes, and what it refuses.
#include "init/font_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "base/io.h"

namespace lsb::init {
namespace {

class FontCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lsb-fontcache-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { (void)std::system(("rm -rf " + dir_).c_str()); }
  std::string dir_;
};

TEST_F(FontCacheTest, WritesTheListReadOnlyInAStickyWorldWritableDir) {
  protocol::BoxSetup s;
  s.font_cache_name = "fontlist-v330.json";
  s.font_cache = R"({"_version": 330})";
  ASSERT_TRUE(PlaceFontCache(s, dir_).ok());
  struct stat st {};
  ASSERT_EQ(::stat((dir_ + "/.matplotlib").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777u);  // matplotlib's W_OK test passes; others' files stay theirs
  ASSERT_EQ(::stat((dir_ + "/.matplotlib/fontlist-v330.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0444u);
  auto text = ReadFile(dir_ + "/.matplotlib/fontlist-v330.json");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, s.font_cache);
}

TEST_F(FontCacheTest, NothingWithoutAList) {
  protocol::BoxSetup s;
  ASSERT_TRUE(PlaceFontCache(s, dir_).ok());
  struct stat st {};
  EXPECT_NE(::stat((dir_ + "/.matplotlib").c_str(), &st), 0);
  std::map<std::string, std::string> env;
  AddFontCacheEnv(env, s);
  EXPECT_TRUE(env.empty());
}

TEST_F(FontCacheTest, RefusesANameThatIsNotAFontList) {
  protocol::BoxSetup s;
  s.font_cache = "{}";
  for (const char* bad : {"../x.json", "fontlist-v.json", "fontlist-v1/.json", "fontlist-v12.json/..", "x",
                          "fontlist-v12a.json", ""}) {
    s.font_cache_name = bad;
    auto st = PlaceFontCache(s, dir_);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.error().message.find("fontlist-v<N>.json"), std::string::npos) << st.error().message;
  }
}

TEST_F(FontCacheTest, RefusesAListOver4MiB) {
  protocol::BoxSetup s;
  s.font_cache_name = "fontlist-v330.json";
  s.font_cache.assign((4u << 20) + 1, ' ');
  auto st = PlaceFontCache(s, dir_);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("4 MiB"), std::string::npos);
}

TEST_F(FontCacheTest, TheRunsOwnMplconfigdirWins) {
  protocol::BoxSetup s;
  s.font_cache_name = "fontlist-v330.json";
  s.font_cache = "{}";
  std::map<std::string, std::string> env;
  AddFontCacheEnv(env, s);
  EXPECT_EQ(env["MPLCONFIGDIR"], "/run/job/.matplotlib");
  env["MPLCONFIGDIR"] = "/tmp/mine";
  AddFontCacheEnv(env, s);
  EXPECT_EQ(env["MPLCONFIGDIR"], "/tmp/mine");
}

}  // namespace
}  // namespace lsb::init
