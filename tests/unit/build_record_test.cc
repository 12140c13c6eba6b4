// container.build through the Backend interface: the record of a build (runtime/build_record.h)
// read back from the native store's JSON and through NativeBackend::BuildRecordOf (what
// GET /v1/policies asks), and the answers of a backend that cannot build.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "image/store_puller.h"
#include "runtime/backend.h"
#include "runtime/build_record.h"
#include "runtime/native/native_backend.h"

namespace lsb {
namespace {

// What env_builder.cc writes: the image's own report may hold entries of any shape.
constexpr const char* kStoreRecord = R"({
  "reference": "build.llm-sandbox.local/env:ab12",
  "policy": "data",
  "source_file": "/etc/llm-sandbox/policies/data.yaml",
  "base": "docker.io/library/python:3.12-slim",
  "base_digest": "sha256:00ff",
  "steps": ["pip install pandas", "run make"],
  "python": "3.12.1",
  "packages": [["pandas", "2.2.2"], ["bad"], [1, "2"], ["numpy", "2.0.0"]],
  "apt": [["jq", "1.6-2"]]
})";

TEST(BuildRecord, ReadsTheStoresRecordAndDropsMalformedPairs) {
  auto r = ParseBuildRecord(kStoreRecord, "builds/ab12.json", "");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->reference, "build.llm-sandbox.local/env:ab12");
  EXPECT_EQ(r->policy, "data");
  EXPECT_EQ(r->source_file, "/etc/llm-sandbox/policies/data.yaml");
  EXPECT_EQ(r->base, "docker.io/library/python:3.12-slim");
  EXPECT_EQ(r->base_digest, "sha256:00ff");
  EXPECT_EQ(r->steps, (std::vector<std::string>{"pip install pandas", "run make"}));
  EXPECT_EQ(r->python, "3.12.1");
  EXPECT_EQ(r->packages, (NameVersions{{"pandas", "2.2.2"}, {"numpy", "2.0.0"}}));
  EXPECT_EQ(r->apt, (NameVersions{{"jq", "1.6-2"}}));
}

TEST(BuildRecord, TheCallersReferenceStandsInAndNonJsonIsAnErrorNamingTheRecord) {
  auto r = ParseBuildRecord(R"({"policy": "p"})", "x.json", "build.llm-sandbox.local/env:cd34");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->reference, "build.llm-sandbox.local/env:cd34");
  EXPECT_TRUE(r->packages.empty());
  auto bad = ParseBuildRecord("[1, 2]", "builds/x.json", "");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("builds/x.json"), std::string::npos) << bad.error().message;
}

class StoreDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/lsb-build-record-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    root_ = dir;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::unique_ptr<native::NativeBackend> WithStore() {
    native::NativeOptions o;
    o.image_source = std::make_shared<image::SharedStore>(image::StoreOptions{root_});
    return std::make_unique<native::NativeBackend>(o);
  }
  static Policy Built(const std::string& name) {
    Policy p;
    p.name = name;
    p.image = "python:3.12-slim";
    p.build.pip = {"pandas"};
    return p;
  }
  std::string root_;
};

TEST_F(StoreDir, TheNativeBackendAnswersItsStoresRecordOfThePolicy) {
  auto made = WithStore();
  native::NativeBackend& backend = *made;
  EXPECT_FALSE(backend.BuildRecordOf(Built("data")).has_value()) << "nothing built yet";
  std::filesystem::create_directories(root_ + "/builds/by-policy");
  std::ofstream(root_ + "/builds/by-policy/data.json") << kStoreRecord;
  auto record = backend.BuildRecordOf(Built("data"));
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(record->reference, "build.llm-sandbox.local/env:ab12");
  EXPECT_EQ(record->packages.size(), 2u);
  // A policy without a build has no environment, whatever the store holds under its name.
  Policy plain = Built("data");
  plain.build = BuildSpec{};
  EXPECT_FALSE(backend.BuildRecordOf(plain).has_value());
  // A name that is not a file name is never a path into the store.
  EXPECT_FALSE(backend.BuildRecordOf(Built("../data")).has_value());
}

TEST(NativeBuild, WithoutAStoreTheRecordIsNoneAndABuildIsAnErrorSayingWhy) {
  native::NativeBackend backend{native::NativeOptions{}};
  Policy p;
  p.name = "data";
  p.image = "python:3.12-slim";
  p.build.pip = {"pandas"};
  EXPECT_FALSE(backend.BuildRecordOf(p).has_value());
  auto built = backend.BuildEnvironment(p, nullptr);
  ASSERT_FALSE(built.ok());
  EXPECT_NE(built.error().message.find("needs the image store"), std::string::npos) << built.error().message;
}

// Only what Backend requires: building is the interface's default answer.
class NoBuildBackend : public Backend {
 public:
  std::string name() const override { return "no-build"; }
  Enforcement DescribeControl(const ControlRow&, const Policy&) const override { return Enforced("test double"); }
  Status Check(const Policy&) const override { return OkStatus(); }
  Result<std::unique_ptr<Box>> Start(const Policy&, const protocol::BoxSetup&, const BoxOwner&) override {
    return Error{"this test backend starts no box"};
  }
  Result<protocol::BoxSetup> SetupFor(const Policy& policy) const override { return PolicyBoxSetup(policy); }
};

TEST(BackendBuild, ABackendThatCannotBuildSaysSoByName) {
  NoBuildBackend backend;
  Policy p;
  p.name = "data";
  p.build.pip = {"pandas"};
  auto built = backend.BuildEnvironment(p, nullptr);
  ASSERT_FALSE(built.ok());
  EXPECT_EQ(built.error().message, "policy 'data' has a container.build, which the no-build backend does not build");
  EXPECT_FALSE(backend.BuildRecordOf(p).has_value());
}

}  // namespace
}  // namespace lsb
