// container.image on the native backend (runtime/native/box_root.h): the image map first (host,
// directory, alias), then the image store, then container.pull, else an error that says how to
// get the image. The store and the registry client are interfaces; here a fixed set of images
// and a puller that records its calls (and stores what it "pulls") stand in for them.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <mutex>
#include <vector>

#include "image/reference.h"
#include "policy/policy_loader.h"
#include "runtime/image_map.h"
#include "runtime/native/box_root.h"
#include "runtime/native/native_backend.h"

namespace lsb::native {
namespace {

image::ImageRoot Root(const std::string& canonical, std::vector<std::string> layers = {"/l/1", "/l/2"}) {
  image::ImageRoot r;
  r.reference = canonical;
  r.manifest_digest = "sha256:" + std::string(64, 'a');
  r.layers = std::move(layers);
  r.config.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"};
  r.config.working_dir = "/srv";
  return r;
}

class FixedImages : public image::ImageSource {
 public:
  Result<image::ImageRoot> Resolve(const image::ImageReference& ref) const override {
    std::lock_guard<std::mutex> lock(mu_);
    ++resolves;
    auto it = images.find(ref.Canonical());
    if (it == images.end()) return Error{ErrorCode::kNotFound, "not stored: " + ref.Canonical()};
    return it->second;
  }
  void Add(const std::string& canonical) { images[canonical] = Root(canonical); }
  std::map<std::string, image::ImageRoot> images;
  mutable int resolves = 0;
  mutable std::mutex mu_;
};

class RecordingPuller : public image::ImagePuller {
 public:
  explicit RecordingPuller(FixedImages* store) : store_(store) {}
  Status Pull(const image::ImageReference& ref) override {
    pulled.push_back(ref.Canonical());
    if (!fail.empty()) return Error{fail};
    store_->Add(ref.Canonical());
    return OkStatus();
  }
  std::vector<std::string> pulled;
  std::string fail;

 private:
  FixedImages* store_;
};

ImageMap Map(const std::string& yaml) {
  auto m = ImageMap::Parse(yaml, "images.yaml");
  EXPECT_TRUE(m.ok()) << m.error().message;
  return m.ok() ? *m : ImageMap{};
}

constexpr const char* kPython = "docker.io/library/python:3.12-slim";

TEST(ImageResolution, MapEntriesComeBeforeTheStore) {
  FixedImages store;
  store.Add(kPython);
  RecordingPuller puller(&store);
  ImageMap map = Map("images:\n  \"python:3.12-slim\": host\n  \"alpine:3\": /tmp\n");
  auto host = ResolveBoxRoot("python:3.12-slim", "always", {map, &store, &puller}, true);
  ASSERT_TRUE(host.ok()) << host.error().message;
  EXPECT_EQ(host->rootfs, "host");
  auto dir = ResolveBoxRoot("alpine:3", "missing", {map, &store, &puller}, true);
  ASSERT_TRUE(dir.ok()) << dir.error().message;
  EXPECT_EQ(dir->rootfs, "/tmp");
  EXPECT_FALSE(dir->image.has_value());
  EXPECT_TRUE(puller.pulled.empty()) << "a mapped image is never pulled";
  EXPECT_EQ(store.resolves, 0);
}

TEST(ImageResolution, AnUnmappedImageComesFromTheStore) {
  FixedImages store;
  store.Add(kPython);
  ImageMap map = Map("images: {}\n");
  auto r = ResolveBoxRoot("python:3.12-slim", "missing", {map, &store, nullptr}, true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->rootfs, "image");
  ASSERT_TRUE(r->image.has_value());
  EXPECT_EQ(r->image->layers, (std::vector<std::string>{"/l/1", "/l/2"}));
  EXPECT_NE(r->how.find("2 layer(s)"), std::string::npos) << r->how;
}

TEST(ImageResolution, AnAliasIsLookedUpInTheStoreUnderItsTargetOnce) {
  FixedImages store;
  store.Add("127.0.0.1:5000/python:3.12-slim");
  store.Add(kPython);  // the alias must not fall back to the name itself
  ImageMap map = Map("images:\n  \"python:3.12-slim\": \"127.0.0.1:5000/python:3.12-slim\"\n");
  auto r = ResolveBoxRoot("python:3.12-slim", "never", {map, &store, nullptr}, true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->image->reference, "127.0.0.1:5000/python:3.12-slim");
  EXPECT_NE(r->how.find("alias of '127.0.0.1:5000/python:3.12-slim'"), std::string::npos) << r->how;
  EXPECT_EQ(store.resolves, 1);
}

TEST(ImageResolution, AMapEntryCanNameUnpackedLayersWithTheirConfig) {
  ImageMap map = Map("images:\n  \"app:1\":\n    layers: [/srv/l0, /srv/l1]\n    env: [\"PATH=/opt/bin\"]\n"
                     "    workdir: /app\n");
  auto r = ResolveBoxRoot("app:1", "never", {map, nullptr, nullptr}, true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->rootfs, "image");
  EXPECT_EQ(r->image->layers, (std::vector<std::string>{"/srv/l0", "/srv/l1"}));
  EXPECT_EQ(r->image->config.env, (std::vector<std::string>{"PATH=/opt/bin"}));
  EXPECT_EQ(r->image->config.working_dir, "/app");
  for (const char* bad : {"images:\n  a:\n    layers: [relative]\n", "images:\n  a:\n    env: [\"X=1\"]\n",
                          "images:\n  a:\n    layers: [/l]\n    env: [NOEQUALS]\n",
                          "images:\n  a:\n    layers: [/l]\n    upper: /x\n"}) {
    auto m = ImageMap::Parse(bad, "images.yaml");
    EXPECT_FALSE(m.ok()) << bad;
    if (!m.ok()) {
      EXPECT_NE(m.error().message.find("images.yaml:"), std::string::npos) << m.error().message;
    }
  }
}

TEST(ImageResolution, AliasChainsAndLoopsAreRefusedWhenTheMapIsRead) {
  auto chain = ImageMap::Parse("images:\n  a: b\n  b: host\n", "images.yaml");
  ASSERT_FALSE(chain.ok());
  EXPECT_NE(chain.error().message.find("no chains"), std::string::npos) << chain.error().message;
  auto loop = ImageMap::Parse("images:\n  \"x:1\": \"y:1\"\n  \"docker.io/library/y:1\": \"x:1\"\n", "images.yaml");
  ASSERT_FALSE(loop.ok());
  auto bad = ImageMap::Parse("images:\n  a: \"Not An Image!\"\n", "images.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("image reference to alias"), std::string::npos) << bad.error().message;
  EXPECT_TRUE(ImageMap::Parse("images:\n  \"python:3\": \"docker.io/library/python:3\"\n", "m").ok())
      << "an alias to its own canonical name is no chain";
}

TEST(ImagePull, MissingPullsOnceThenUsesTheStore) {
  FixedImages store;
  RecordingPuller puller(&store);
  ImageMap map = Map("images: {}\n");
  auto r = ResolveBoxRoot("python:3.12-slim", "missing", {map, &store, &puller}, true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(puller.pulled, (std::vector<std::string>{kPython}));
  auto again = ResolveBoxRoot("python:3.12-slim", "missing", {map, &store, &puller}, true);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(puller.pulled.size(), 1u) << "stored now: not pulled again";
}

TEST(ImagePull, NeverIsAnErrorThatSaysHowToGetTheImage) {
  FixedImages store;
  RecordingPuller puller(&store);
  ImageMap map = Map("images: {}\n");
  auto r = ResolveBoxRoot("python:3.12-slim", "never", {map, &store, &puller}, true);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(puller.pulled.empty());
  const std::string& m = r.error().message;
  EXPECT_TRUE(r.error().IsNotFound());
  EXPECT_NE(m.find("'python:3.12-slim'"), std::string::npos) << m;
  EXPECT_NE(m.find("images.yaml"), std::string::npos) << m;
  EXPECT_NE(m.find("container.pull: never"), std::string::npos) << m;
  EXPECT_NE(m.find("llm-sandbox image pull python:3.12-slim"), std::string::npos) << m;
  EXPECT_NE(m.find("llm-sandbox image import"), std::string::npos) << m;
}

TEST(ImagePull, AlwaysPullsEvenAStoredImage) {
  FixedImages store;
  store.Add(kPython);
  RecordingPuller puller(&store);
  ImageMap map = Map("images: {}\n");
  auto r = ResolveBoxRoot("python:3.12-slim", "always", {map, &store, &puller}, true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(puller.pulled, (std::vector<std::string>{kPython}));
}

TEST(ImagePull, ExplainNeverPulls) {
  FixedImages store;
  RecordingPuller puller(&store);
  ImageMap map = Map("images: {}\n");
  auto r = ResolveBoxRoot("python:3.12-slim", "missing", {map, &store, &puller}, false);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->pull_pending);
  EXPECT_TRUE(puller.pulled.empty());
  auto always = ResolveBoxRoot("python:3.12-slim", "always", {map, &store, &puller}, false);
  ASSERT_TRUE(always.ok());
  EXPECT_TRUE(puller.pulled.empty());
}

TEST(ImagePull, AFailedPullNamesTheImageAndThePolicy) {
  FixedImages store;
  RecordingPuller puller(&store);
  puller.fail = "registry 127.0.0.1:5000: connection refused";
  ImageMap map = Map("images: {}\n");
  auto r = ResolveBoxRoot("127.0.0.1:5000/python:3.12-slim", "missing", {map, &store, &puller}, true);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("container.pull: missing"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("connection refused"), std::string::npos);
  // What was searched and how to get the image, as when nothing could pull it.
  EXPECT_NE(r.error().message.find("is not in the image map"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("llm-sandbox image pull"), std::string::npos) << r.error().message;
}

TEST(ImagePull, WithoutAStoreOrPullerTheErrorSaysSo) {
  ImageMap map = Map("images: {}\n");
  auto r = ResolveBoxRoot("python:3.12-slim", "missing", {map, nullptr, nullptr}, true);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("no image store here"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("llm-sandbox image pull"), std::string::npos);
  auto bad = ResolveBoxRoot("python:3.12-slim", "sometimes", {map, nullptr, nullptr}, true);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().field, "container.pull");
}

// The backend turns a stored image into init's setup: the layers and the config's gaps.
TEST(NativeBackend, SetupForAStoredImageCarriesLayersEnvAndWorkingDir) {
  auto store = std::make_shared<FixedImages>();
  store->Add(kPython);
  std::string map_file = ::testing::TempDir() + "/images_store.yaml";
  std::ofstream(map_file) << "images: {}\n";
  NativeOptions o;
  o.images_file = map_file;
  o.image_source = store;
  NativeBackend b(o);
  Policy p;
  p.name = "t";
  p.image = "python:3.12-slim";
  auto s = b.SetupFor(p);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->rootfs, "image");
  EXPECT_EQ(s->layers, (std::vector<std::string>{"/l/1", "/l/2"}));
  EXPECT_EQ(s->image_env, store->images[kPython].config.env);
  EXPECT_EQ(s->image_workdir, "/srv");
  // A policy with its own workdir: the image's is not offered.
  p.positions["container.workdir"] = SourcePos{"p.yaml", 3, 3};
  auto own = b.SetupFor(p);
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(own->image_workdir, "");
  // Explain says where the root comes from; never pull.
  bool found = false;
  for (const auto& c : b.Explain(p))
    if (c.control == "container.image") {
      found = true;
      EXPECT_TRUE(c.enforced);
      EXPECT_NE(c.how.find("the image store"), std::string::npos) << c.how;
    }
  EXPECT_TRUE(found);
  // Too many layers: refused on the host, before any box.
  store->images[kPython].layers.assign(protocol::kMaxImageLayers + 1, "/l");
  auto many = b.SetupFor(p);
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.error().message.find("layers"), std::string::npos);
}

// ---- the policy field

TEST(PolicyPull, DefaultsToMissingAndParsesEachValue) {
  auto d = ParsePolicyText("version: \"1.0\"\nname: t\n", "t.yaml");
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->pull, "missing");
  for (const char* v : {"missing", "always", "never"}) {
    auto p = ParsePolicyText(std::string("version: \"1.0\"\nname: t\ncontainer:\n  pull: ") + v + "\n", "t.yaml");
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p->pull, v);
  }
}

TEST(PolicyPull, AnUnknownValueIsAnErrorWithPositionAndChoices) {
  auto p = ParsePolicyText("version: \"1.0\"\nname: t\ncontainer:\n  pull: sometimes\n", "t.yaml");
  ASSERT_FALSE(p.ok());
  const std::string& m = p.error().message;
  EXPECT_NE(m.find("t.yaml:4:"), std::string::npos) << m;
  EXPECT_NE(m.find("container.pull"), std::string::npos) << m;
  EXPECT_NE(m.find("missing, always"), std::string::npos) << m;
}

}  // namespace
}  // namespace lsb::native
