// The daemon's half of matplotlib's font list (runtime/native/font_cache.h): built from the host's
// python, nothing (not an error) without one or without matplotlib, an error when the build fails.
#include "runtime/native/font_cache.h"

#include <unistd.h>

#include <gtest/gtest.h>

namespace lsb::native {
namespace {

TEST(FontCache, AllowsPythonByTheBasename) {
  EXPECT_TRUE(AllowsPython({"/bin/sh", "/usr/bin/python3"}));
  EXPECT_TRUE(AllowsPython({"/usr/local/bin/python3.12"}));
  EXPECT_FALSE(AllowsPython({"/usr/bin/node", "/bin/bash", "/opt/python/bin/node"}));
  EXPECT_FALSE(AllowsPython({}));
}

TEST(FontCache, NoPythonIsNoListNotAnError) {
  auto c = BuildFontCache("/nonexistent/python3");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->name.empty());
  EXPECT_TRUE(c->json.empty());
}

TEST(FontCache, AFailingBuildIsAnErrorNamingThePython) {
  auto c = BuildFontCache("/bin/false");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("/bin/false"), std::string::npos) << c.error().message;
}

TEST(FontCache, TheHostsListWhenItHasMatplotlib) {
  if (::access("/usr/lib/python3/dist-packages/matplotlib", F_OK) != 0) GTEST_SKIP() << "no host matplotlib";
  auto c = BuildFontCache("/usr/bin/python3");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->name.rfind("fontlist-v", 0), 0u) << c->name;
  EXPECT_NE(c->json.find("ttflist"), std::string::npos);
}

}  // namespace
}  // namespace lsb::native
