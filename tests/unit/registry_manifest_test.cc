#include "image/registry_manifest.h"

#include <gtest/gtest.h>

namespace lsb::image::registry {
namespace {

const std::string kD1 = "sha256:" + std::string(64, 'a');
const std::string kD2 = "sha256:" + std::string(64, 'b');
const std::string kD3 = "sha256:" + std::string(64, 'c');

std::string Entry(const std::string& digest, const std::string& arch, const std::string& variant = "",
                  const std::string& os = "linux") {
  std::string p = R"({"os":")" + os + R"(","architecture":")" + arch + "\"" +
                  (variant.empty() ? "" : R"(,"variant":")" + variant + "\"") + "}";
  return R"({"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":")" + digest +
         R"(","size":100,"platform":)" + p + "}";
}

Manifest Index(const std::vector<std::string>& entries) {
  std::string body = R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[)";
  for (size_t i = 0; i < entries.size(); ++i) body += (i ? "," : "") + entries[i];
  body += "]}";
  auto m = ParseManifest(body, "application/vnd.oci.image.index.v1+json");
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
  return m.ok() ? *m : Manifest{};
}

TEST(ManifestSelection, TheHostsArchitectureIsChosenAndAttestationsNever) {
  auto idx = Index({Entry(kD1, "arm64", "v8"), Entry(kD3, "unknown", "", "unknown"), Entry(kD2, "amd64")});
  auto d = SelectPlatform(idx, Platform{"linux", "amd64", ""});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->digest, kD2);
  auto none = SelectPlatform(idx, Platform{"linux", "s390x", ""});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("linux/arm64/v8"), std::string::npos) << none.error().message;
  EXPECT_NE(none.error().message.find("linux/s390x"), std::string::npos);
}

TEST(ManifestSelection, Arm64TakesV8OrNoVariantArmTakesTheHighestItRuns) {
  auto idx = Index({Entry(kD1, "arm", "v6"), Entry(kD2, "arm", "v7"), Entry(kD3, "arm64")});
  EXPECT_EQ(SelectPlatform(idx, Platform{"linux", "arm64", "v8"})->digest, kD3);
  EXPECT_EQ(SelectPlatform(idx, Platform{"linux", "arm", "v7"})->digest, kD2);
  EXPECT_EQ(SelectPlatform(idx, Platform{"linux", "arm", "v6"})->digest, kD1);
  auto only_v9 = Index({Entry(kD1, "arm64", "v9")});
  EXPECT_FALSE(SelectPlatform(only_v9, Platform{"linux", "arm64", "v8"}).ok());
  auto v8_only = Index({Entry(kD2, "arm", "v8")});
  EXPECT_FALSE(SelectPlatform(v8_only, Platform{"linux", "arm", "v7"}).ok());
}

TEST(ManifestParse, SchemaOneIsRefusedWithAMessageSayingWhatToDo) {
  auto m = ParseManifest(R"({"schemaVersion":1,"name":"x","tag":"y","fsLayers":[]})",
                         "application/vnd.docker.distribution.manifest.v1+prettyjws");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("schema 1"), std::string::npos);
  EXPECT_FALSE(ParseManifest(R"({"schemaVersion":1})", "application/json").ok());
}

TEST(ManifestParse, ADockerV2ManifestServedAsJsonIsReadByItsMediaType) {
  std::string body = R"({"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",
    "config":{"mediaType":"application/vnd.docker.container.image.v1+json","digest":")" + kD1 + R"(","size":10},
    "layers":[{"mediaType":"application/vnd.docker.image.rootfs.diff.tar.gzip","digest":")" + kD2 + R"(","size":20}]})";
  auto m = ParseManifest(body, "application/json");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->kind, ManifestKind::kImage);
  EXPECT_EQ(m->media_type, kDockerManifest);
  EXPECT_EQ(m->config.digest, kD1);
  ASSERT_EQ(m->layers.size(), 1u);
  EXPECT_EQ(m->layers[0].size, 20u);
}

TEST(ManifestParse, BadDigestsSizesAndTooManyLayersAreRefused) {
  auto img = [](const std::string& layer) {
    return R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"digest":")" + kD1 +
           R"(","size":10},"layers":[)" + layer + "]}";
  };
  EXPECT_FALSE(ParseManifest(img(R"({"digest":"sha512:abcd","size":1})"), "").ok());
  EXPECT_FALSE(ParseManifest(img(R"({"digest":")" + kD2 + R"(","size":-1})"), "").ok());
  EXPECT_FALSE(ParseManifest(img(R"({"digest":")" + kD2 + R"(","size":"5"})"), "").ok());
  EXPECT_FALSE(ParseManifest(img(R"({"digest":")" + kD2 + R"(","size":99999999999999})"), "").ok());
  std::string many;
  for (size_t i = 0; i <= kMaxLayers; ++i) many += (i ? "," : "") + std::string(R"({"digest":")") + kD2 + R"(","size":1})";
  auto m = ParseManifest(img(many), "");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("layers"), std::string::npos);
  EXPECT_TRUE(ParseManifest(img(R"({"digest":")" + kD2 + R"(","size":1})"), "").ok());
}

TEST(ManifestParse, AnUnknownMediaTypeIsRefusedAndAnOversizedBodyTooBeforeParsing) {
  EXPECT_FALSE(ParseManifest(R"({"schemaVersion":2,"mediaType":"application/vnd.foo"})", "application/vnd.foo").ok());
  std::string huge(kMaxManifestBytes + 1, ' ');
  EXPECT_FALSE(ParseManifest(huge, kOciManifest).ok());
}

TEST(ManifestParse, TheAcceptHeaderAsksForAllFourTypes) {
  std::string a = ManifestAccept();
  for (auto t : {kOciIndex, kOciManifest, kDockerList, kDockerManifest}) EXPECT_NE(a.find(t), std::string::npos);
  EXPECT_EQ(a.find("distribution.manifest.v1+"), std::string::npos);  // never schema 1
}

}  // namespace
}  // namespace lsb::image::registry
