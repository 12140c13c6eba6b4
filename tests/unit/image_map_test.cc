#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "runtime/image_map.h"

namespace lsb {
namespace {

TEST(ImageMap, ParsesHostAndDirectories) {
  auto m = ImageMap::Parse("images:\n  \"python:3.12-slim\": host\n  \"alpine:3\": /tmp\n", "x.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(*m->Resolve("python:3.12-slim"), "host");
  EXPECT_EQ(*m->Resolve("alpine:3"), "/tmp");
  EXPECT_EQ(*m->Resolve("host"), "host");  // needs no entry
}

TEST(ImageMap, UnmappedImageNamesImageFilesAndFix) {
  auto m = ImageMap::Parse("images: {}\n", "x.yaml");
  ASSERT_TRUE(m.ok());
  auto r = m->Resolve("node:20");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("'node:20'"), std::string::npos);
  EXPECT_NE(r.error().message.find("x.yaml"), std::string::npos);
  EXPECT_NE(r.error().message.find("\"node:20\": host"), std::string::npos);
}

TEST(ImageMap, RejectsBadValuesWithPosition) {
  // Neither host, an absolute directory nor an image reference (a relative path such as
  // "relative/dir" now reads as an alias to that image: the alias feature).
  auto m = ImageMap::Parse("images:\n  a: \"relative dir!\"\n", "m.yaml");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("m.yaml:2:"), std::string::npos) << m.error().message;
  auto k = ImageMap::Parse("imagez: {}\n", "m.yaml");
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.error().message.find("unknown key 'imagez'"), std::string::npos);
  auto y = ImageMap::Parse("images: [\n", "m.yaml");
  ASSERT_FALSE(y.ok());
}

TEST(ImageMap, MissingDirectoryIsAnError) {
  auto m = ImageMap::Parse("images:\n  a: /nonexistent/rootfs\n", "m.yaml");
  ASSERT_TRUE(m.ok());
  auto r = m->Resolve("a");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("not a directory"), std::string::npos);
}

TEST(ImageMap, ShippedConfigMapsPythonToHost) {
  auto m = ImageMap::Load(std::string(LSB_SOURCE_DIR) + "/config/images.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(*m->Resolve("python:3.12-slim"), "host");
  EXPECT_EQ(*m->Resolve("python:3.11-slim"), "host");
}

TEST(ImageMap, LoadOrderExplicitThenEnv) {
  std::string f = ::testing::TempDir() + "/images_env.yaml";
  std::ofstream(f) << "images:\n  \"e:1\": host\n";
  ::setenv("LLM_SANDBOX_IMAGES", f.c_str(), 1);
  auto m = ImageMap::Load("");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->source(), f);
  EXPECT_TRUE(m->Resolve("e:1").ok());
  auto paths = ImageMap::SearchPath("/x.yaml");
  ASSERT_EQ(paths.size(), 3u);
  EXPECT_EQ(paths[0], "/x.yaml");
  EXPECT_EQ(paths[1], f);
  ::setenv("LLM_SANDBOX_IMAGES", "/nonexistent/images.yaml", 1);
  EXPECT_FALSE(ImageMap::Load("").ok());  // named explicitly: must exist
  ::unsetenv("LLM_SANDBOX_IMAGES");
}

}  // namespace
}  // namespace lsb
