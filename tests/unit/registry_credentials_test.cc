#include "image/registry_credentials.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace lsb::image::registry {
namespace {

// base64("alice:s3cret:with:colons")
constexpr const char* kAliceAuth = "YWxpY2U6czNjcmV0OndpdGg6Y29sb25z";

TEST(DockerConfigCredentials, AnAuthsEntryForTheRegistryGivesUserAndPassword) {
  std::string cfg = std::string(R"({"auths":{"127.0.0.1:5000":{"auth":")") + kAliceAuth + R"("}}})";
  auto r = FindCredentials(cfg, "/c/config.json", "127.0.0.1:5000");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->credentials.has_value());
  EXPECT_EQ(r->credentials->username, "alice");
  EXPECT_EQ(r->credentials->password, "s3cret:with:colons");
  EXPECT_NE(r->credentials->source.find("/c/config.json"), std::string::npos);
}

TEST(DockerConfigCredentials, DockerHubsKeyIsTheV1IndexUrlAndSchemesArePrefixesOnly) {
  std::string hub = std::string(R"({"auths":{"https://index.docker.io/v1/":{"auth":")") + kAliceAuth + R"("}}})";
  EXPECT_TRUE(FindCredentials(hub, "c", "docker.io")->credentials.has_value());
  EXPECT_FALSE(FindCredentials(hub, "c", "ghcr.io")->credentials.has_value());
  std::string pref = std::string(R"({"auths":{"https://ghcr.io":{"auth":")") + kAliceAuth + R"("}}})";
  EXPECT_TRUE(FindCredentials(pref, "c", "ghcr.io")->credentials.has_value());
  EXPECT_FALSE(FindCredentials(pref, "c", "ghcr.io.evil")->credentials.has_value());
}

TEST(DockerConfigCredentials, ABadAuthValueIsAnErrorNamingTheEntry) {
  auto r = FindCredentials(R"({"auths":{"h":{"auth":"bm9jb2xvbg=="}}})", "/c/config.json", "h");  // "nocolon"
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("auths.\"h\""), std::string::npos);
  EXPECT_FALSE(FindCredentials("[1,2]", "c", "h").ok());
  EXPECT_FALSE(FindCredentials(R"({"auths":{"h":{"auth":"!!!"}}})", "c", "h").ok());
}

TEST(DockerConfigCredentials, ACredentialHelperIsReportedNotRun) {
  auto r = FindCredentials(R"({"credHelpers":{"ghcr.io":"gh"}})", "c", "ghcr.io");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->credentials.has_value());
  EXPECT_NE(r->note.find("credential helper \"gh\""), std::string::npos);
  EXPECT_NE(FindCredentials(R"({"credsStore":"desktop"})", "c", "x")->note.find("desktop"), std::string::npos);
}

TEST(DockerConfigCredentials, DockerConfigEnvironmentNamesTheDirectory) {
  const char* old_home = std::getenv("HOME");
  std::string saved_home = old_home != nullptr ? old_home : "";
  setenv("DOCKER_CONFIG", "/tmp/some-dir", 1);
  EXPECT_EQ(DockerConfigPath(), "/tmp/some-dir/config.json");
  unsetenv("DOCKER_CONFIG");
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(DockerConfigPath(), "/home/u/.docker/config.json");
  if (old_home != nullptr) setenv("HOME", saved_home.c_str(), 1);
  else unsetenv("HOME");
}

TEST(DockerConfigCredentials, Base64DecodesWithAndWithoutPadding) {
  EXPECT_EQ(*Base64Decode("YQ=="), "a");
  EXPECT_EQ(*Base64Decode("YQ"), "a");
  EXPECT_EQ(*Base64Decode("YWI="), "ab");
  EXPECT_FALSE(Base64Decode("a*b").has_value());
}

}  // namespace
}  // namespace lsb::image::registry
