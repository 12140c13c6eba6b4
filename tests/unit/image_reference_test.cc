#include "image/reference.h"

#include <gtest/gtest.h>

namespace lsb::image {
namespace {

ImageReference Must(std::string_view text) {
  auto r = ParseImageReference(text);
  EXPECT_TRUE(r.ok()) << text << ": " << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value() : ImageReference{};
}

TEST(ImageReference, AFamiliarNameIsDockerHubsOfficialImageAsDockerSaysIt) {
  auto r = Must("python:3.12-slim");
  EXPECT_EQ(r.registry, "docker.io");
  EXPECT_EQ(r.repository, "library/python");
  EXPECT_EQ(r.tag, "3.12-slim");
  EXPECT_EQ(r.Canonical(), "docker.io/library/python:3.12-slim");
  EXPECT_EQ(r.Familiar(), "python:3.12-slim");
  EXPECT_EQ(r.ApiHost(), "registry-1.docker.io");
}

TEST(ImageReference, NoTagMeansLatestAndAUserRepositoryStaysOnTheHub) {
  EXPECT_EQ(Must("alpine").Canonical(), "docker.io/library/alpine:latest");
  EXPECT_EQ(Must("myuser/tool").Canonical(), "docker.io/myuser/tool:latest");
  EXPECT_EQ(Must("index.docker.io/library/debian:12").Canonical(), "docker.io/library/debian:12");
}

TEST(ImageReference, AHostWithAPortOrADotOrLocalhostIsARegistry) {
  auto r = Must("127.0.0.1:5000/python:3.12-slim");
  EXPECT_EQ(r.registry, "127.0.0.1:5000");
  EXPECT_EQ(r.repository, "python");  // no library/ outside Docker Hub
  EXPECT_EQ(r.tag, "3.12-slim");
  EXPECT_EQ(r.ApiHost(), "127.0.0.1:5000");
  EXPECT_EQ(Must("ghcr.io/org/app").registry, "ghcr.io");
  EXPECT_EQ(Must("localhost/app:1").registry, "localhost");
  EXPECT_EQ(Must("localhost:5000/a/b/c:v1.2").repository, "a/b/c");
}

TEST(ImageReference, ADigestPinsTheManifestWithOrWithoutATag) {
  const std::string d = "sha256:" + std::string(64, 'a');
  auto pinned = Must("python@" + d);
  EXPECT_EQ(pinned.tag, "");
  EXPECT_EQ(pinned.digest, d);
  EXPECT_EQ(pinned.ManifestReference(), d);
  auto both = Must("python:3.12@" + d);
  EXPECT_EQ(both.tag, "3.12");
  EXPECT_EQ(both.ManifestReference(), d);
  EXPECT_EQ(both.Canonical(), "docker.io/library/python:3.12@" + d);
}

TEST(ImageReference, MalformedPartsAreRefusedNamingThePart) {
  for (std::string_view bad : {"", "Python:3", "python:", "python:-x", "a//b", "python@sha256:abc",
                               "python@md5:" "0123456789abcdef0123456789abcdef", "/python", "python/",
                               "a..b", "reg:5000/", "python:3 12"}) {
    auto r = ParseImageReference(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(r.error().IsInvalidArgument()) << bad;
    EXPECT_EQ(r.error().field, "image");
  }
  auto upper = ParseImageReference("Python:3");
  EXPECT_NE(upper.error().message.find("'Python'"), std::string::npos) << upper.error().message;
}

TEST(ImageReference, OnlySha256DigestsAreAccepted) {
  EXPECT_TRUE(IsSha256Digest("sha256:" + std::string(64, '0')));
  EXPECT_FALSE(IsSha256Digest("sha256:" + std::string(63, '0')));
  EXPECT_FALSE(IsSha256Digest("sha256:" + std::string(64, 'A')));
  EXPECT_FALSE(IsSha256Digest("sha512:" + std::string(64, '0')));
}

}  // namespace
}  // namespace lsb::image
