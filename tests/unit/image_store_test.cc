// The image store (src/image/store.h): imports, verification, atomicity, GC and bounds, on a real
// directory with layouts and archives built here.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <random>

#include "image/image_fs.h"
#include "image/store.h"
#include "image/store_lease.h"
#include "image_test_util.h"

namespace lsb::image {
namespace {

using testing::DigestOf;
using testing::Gzip;
using testing::LayoutImage;
using testing::MakeLayout;
using testing::ScratchDir;
using testing::TarBuilder;

ImageReference Ref(const std::string& s) { return ParseImageReference(s).value(); }

int CountEntries(const std::string& dir) {
  int n = 0;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') ++n;
    ::closedir(d);
  }
  return n;
}

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = Reopen(); }
  std::unique_ptr<Store> Reopen(uint64_t max_bytes = 0) {
    StoreOptions o;
    o.root = scratch_.path() + "/store";
    o.max_bytes = max_bytes;
    o.limits = limits_;
    auto s = Store::Open(o);
    EXPECT_TRUE(s.ok()) << s.error().message;
    return std::move(s).value();
  }
  LayoutImage Image(const std::vector<std::string>& tars) {
    LayoutImage img;
    for (const auto& t : tars) {
      img.uncompressed.push_back(t);
      img.layers.push_back(Gzip(t));
    }
    img.architecture = HostArchitecture();
    return img;
  }
  std::string Layout(const LayoutImage& img, const std::string& tag = "1") {
    std::string dir = scratch_.path() + "/layout-" + std::to_string(layouts_++);
    MakeLayout(dir, img, tag);
    return dir;
  }
  std::string base_ = TarBuilder()
                          .Dir("etc/")
                          .File("etc/os-release", "PRETTY_NAME=\"Test Linux 1\"\n")
                          .Dir("usr/")
                          .Dir("usr/bin/")
                          .File("usr/bin/python3.11", "#!", 0755)
                          .Symlink("usr/bin/python3", "python3.11")
                          .Symlink("bin", "usr/bin")
                          .Finish();
  std::string app_ = TarBuilder().Dir("app/").File("app/main.py", "print(1)\n").File("etc/.wh.os-release", "").Finish();

  ScratchDir scratch_;
  ImageLimits limits_;
  std::unique_ptr<Store> store_;
  int layouts_ = 0;
};

TEST_F(StoreTest, ImportedOciLayoutResolvesToVerifiedLayersAndConfig) {
  auto root = store_->ImportOciLayout(Layout(Image({base_, app_})), Ref("example.com/app:1"));
  ASSERT_TRUE(root.ok()) << root.error().message;
  ASSERT_EQ(root->layers.size(), 2u);
  EXPECT_EQ(root->layers[0], store_->root() + "/layers/sha256/" + DigestOf(base_).substr(7));
  EXPECT_EQ(root->config.working_dir, "/work");
  auto again = store_->Resolve(Ref("example.com/app:1"));
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->manifest_digest, root->manifest_digest);
  // The store root is an OCI layout naming the image by its canonical reference.
  std::string index = testing::ReadFrom(store_->root() + "/index.json");
  EXPECT_NE(index.find("\"org.opencontainers.image.ref.name\": \"example.com/app:1\""), std::string::npos) << index;
  EXPECT_TRUE(store_->HasBlob(DigestOf(Gzip(base_))));
  // The merged view: the upper layer's whiteout hides os-release, python3 resolves through symlinks.
  EXPECT_FALSE(ReadImageFile(root->layers, "/etc/os-release", 4096).ok());
  auto py = FindInterpreters(*root);
  ASSERT_TRUE(py.count("python3"));
  EXPECT_EQ(py["python3"].resolved, "/usr/bin/python3.11");
  EXPECT_FALSE(py.count("node"));
}

TEST_F(StoreTest, ResolveOfAnAbsentImageIsNotFound) {
  auto r = store_->Resolve(Ref("python:3.12-slim"));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().IsNotFound());
  EXPECT_NE(r.error().message.find("image pull"), std::string::npos);
}

TEST_F(StoreTest, BlobDigestMismatchIsRefusedAndNothingIsIndexed) {
  std::string dir = Layout(Image({base_}));
  std::string blob = dir + "/blobs/sha256/" + DigestOf(Gzip(base_)).substr(7);
  std::string bytes = testing::ReadFrom(blob);
  bytes[bytes.size() / 2] ^= 1;
  testing::WriteTo(blob, bytes);
  auto r = store_->ImportOciLayout(dir, Ref("x:1"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("does not match its digest"), std::string::npos) << r.error().message;
  EXPECT_TRUE(store_->List()->empty());
  EXPECT_FALSE(store_->HasBlob(DigestOf(Gzip(base_))));
}

TEST_F(StoreTest, DiffIdMismatchIsRefused) {
  LayoutImage img = Image({base_});
  img.diff_ids = {DigestOf("something else")};
  auto r = store_->ImportOciLayout(Layout(img), Ref("x:1"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("diff_id mismatch"), std::string::npos) << r.error().message;
  EXPECT_TRUE(store_->List()->empty());
  EXPECT_EQ(CountEntries(store_->root() + "/layers/sha256"), 0);
}

TEST_F(StoreTest, AForeignArchitectureImageIsRefusedNamingBothPlatforms) {
  LayoutImage img = Image({base_});
  img.architecture = HostArchitecture() == "arm64" ? "s390x" : "arm64";
  auto r = store_->ImportOciLayout(Layout(img), Ref("x:1"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("the image is for linux/" + img.architecture + " but this host is linux/" +
                                   HostArchitecture()),
            std::string::npos)
      << r.error().message;
  EXPECT_TRUE(store_->List()->empty());
  EXPECT_EQ(CountEntries(store_->root() + "/layers/sha256"), 0) << "refused before any layer is unpacked";
}

TEST_F(StoreTest, LayerCountBeyondTheLimitIsRefused) {
  limits_.max_layers = 2;
  store_ = Reopen();
  auto r = store_->ImportOciLayout(Layout(Image({base_, app_, base_ + ""})), Ref("x:1"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("more than the limit of 2"), std::string::npos) << r.error().message;
}

// An index nested in an index...: bounded, then a manifest list picks linux/<host arch>.
TEST_F(StoreTest, IndexDepthIsBoundedAndManifestListPicksTheHostPlatform) {
  std::string dir = Layout(Image({base_}));
  std::string manifest_digest;
  {
    auto idx = nlohmann::json::parse(testing::ReadFrom(dir + "/index.json"));
    manifest_digest = idx["manifests"][0]["digest"];
  }
  uint64_t msize = testing::ReadFrom(dir + "/blobs/sha256/" + manifest_digest.substr(7)).size();
  nlohmann::json list = {{"schemaVersion", 2}, {"mediaType", "application/vnd.oci.image.index.v1+json"},
                         {"manifests", {{{"mediaType", "application/vnd.oci.image.manifest.v1+json"}, {"digest", DigestOf("other")},
                                         {"size", 5}, {"platform", {{"os", "linux"}, {"architecture", "s390x"}}}},
                                        {{"mediaType", "application/vnd.oci.image.manifest.v1+json"}, {"digest", manifest_digest},
                                         {"size", msize}, {"platform", {{"os", "linux"}, {"architecture", HostArchitecture()}}}}}}};
  std::string current = list.dump();
  for (int depth = 0; depth < 6; ++depth) {
    std::string d = testing::WriteBlob(dir, current);
    nlohmann::json top = {{"schemaVersion", 2}, {"mediaType", "application/vnd.oci.image.index.v1+json"},
                          {"manifests", {{{"mediaType", "application/vnd.oci.image.index.v1+json"}, {"digest", d}, {"size", current.size()},
                                          {"annotations", {{"org.opencontainers.image.ref.name", "d" + std::to_string(depth)}}}}}}};
    testing::WriteTo(dir + "/index.json", top.dump());
    auto r = store_->ImportOciLayout(dir, Ref("x:d" + std::to_string(depth)));
    if (depth < 4) {
      EXPECT_TRUE(r.ok()) << depth << ": " << r.error().message;
    } else {
      ASSERT_FALSE(r.ok());
      EXPECT_NE(r.error().message.find("nest deeper"), std::string::npos) << r.error().message;
    }
    // The next level wraps this one (an index pointing at an index).
    nlohmann::json wrap = {{"schemaVersion", 2}, {"mediaType", "application/vnd.oci.image.index.v1+json"},
                           {"manifests", {{{"mediaType", "application/vnd.oci.image.index.v1+json"}, {"digest", d},
                                           {"size", current.size()}, {"platform", {{"os", "linux"}, {"architecture", HostArchitecture()}}}}}}};
    current = wrap.dump();
  }
}

TEST_F(StoreTest, SharedLayerIsUnpackedOnceAndSurvivesRemovalOfOneImage) {
  ASSERT_TRUE(store_->ImportOciLayout(Layout(Image({base_})), Ref("a:1")).ok());
  ASSERT_TRUE(store_->ImportOciLayout(Layout(Image({base_, app_})), Ref("b:1")).ok());
  EXPECT_EQ(CountEntries(store_->root() + "/layers/sha256"), 2);
  auto rm = store_->Remove(Ref("b:1"));
  ASSERT_TRUE(rm.ok()) << rm.error().message;
  EXPECT_EQ(rm->layers_removed, 1);
  EXPECT_TRUE(store_->Resolve(Ref("a:1")).ok());
  EXPECT_FALSE(store_->Resolve(Ref("b:1")).ok());
  ASSERT_TRUE(store_->Remove(Ref("a:1")).ok());
  EXPECT_EQ(CountEntries(store_->root() + "/layers/sha256"), 0);
  EXPECT_EQ(CountEntries(store_->root() + "/blobs/sha256"), 0);
}

// What a SIGKILL mid-import leaves: a temp dir with a partial layer (its owner dead, so its lock
// free), blobs no index entry names. None of it is visible, and prune or the next import clears it.
TEST_F(StoreTest, KilledImportLeavesNothingVisibleAndIsCleanedUp) {
  pid_t child = ::fork();
  if (child == 0) {
    auto t = store_->NewTempDir("layer");
    if (t.ok()) {
      ::mkdirat(t->fd(), "root", 0755);
      int fd = ::openat(t->fd(), "root/half-written", O_CREAT | O_WRONLY, 0644);
      (void)!::write(fd, "partial", 7);
    }
    ::kill(::getpid(), SIGKILL);  // destructors never run
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  ASSERT_EQ(CountEntries(store_->root() + "/tmp"), 2);  // the dir and its lock
  testing::WriteTo(store_->root() + "/blobs/sha256/" + DigestOf("orphan").substr(7), "orphan");
  testing::WriteTo(store_->root() + "/.index.json.tmp-0123456789abcdef", "{\"half\":");  // an atomic write cut short
  EXPECT_TRUE(store_->List()->empty());
  auto p = store_->Prune();
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->temp_removed, 1);
  EXPECT_EQ(p->blobs_removed, 1);
  EXPECT_EQ(CountEntries(store_->root() + "/tmp"), 0);
  struct stat st {};
  EXPECT_NE(::stat((store_->root() + "/.index.json.tmp-0123456789abcdef").c_str(), &st), 0);
  EXPECT_TRUE(store_->ImportOciLayout(Layout(Image({base_})), Ref("a:1")).ok());
}

// A failure after some layers landed (here: layer 2's diff_id) leaves no index entry, so the
// index never names an image whose layers are not all there; prune removes what landed.
TEST_F(StoreTest, ImportFailingHalfwayNeverIndexesTheImage) {
  LayoutImage img = Image({base_, app_});
  img.diff_ids = {"", DigestOf("wrong")};
  ASSERT_FALSE(store_->ImportOciLayout(Layout(img), Ref("x:1")).ok());
  EXPECT_TRUE(store_->List()->empty());
  EXPECT_EQ(CountEntries(store_->root() + "/layers/sha256"), 1);
  auto p = store_->Prune();
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->layers_removed, 1);
  EXPECT_EQ(CountEntries(store_->root() + "/layers/sha256"), 0);
}

TEST_F(StoreTest, ALayerDeletedBehindTheStoresBackIsReportedNotMounted) {
  auto root = store_->ImportOciLayout(Layout(Image({base_})), Ref("a:1"));
  ASSERT_TRUE(root.ok());
  ASSERT_EQ(std::system(("rm -rf '" + root->layers[0] + "'").c_str()), 0);
  auto r = store_->Resolve(Ref("a:1"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("re-import"), std::string::npos) << r.error().message;
}

TEST_F(StoreTest, CacheBoundEvictsTheLeastRecentlyUsedImage) {
  auto noise = [](unsigned seed) {  // incompressible, so blob and layer both count ~400 KiB
    std::mt19937 gen(seed);
    std::string s(400 << 10, '\0');
    for (auto& c : s) c = static_cast<char>(gen());
    return s;
  };
  std::string big1 = TarBuilder().File("one", noise(1)).Finish();
  std::string big2 = TarBuilder().File("two", noise(2)).Finish();
  std::string big3 = TarBuilder().File("three", noise(3)).Finish();
  store_ = Reopen(1 << 20);  // room for one such image (blob + layer ~800 KiB), not two
  ASSERT_TRUE(store_->ImportOciLayout(Layout(Image({big1})), Ref("one:1")).ok());
  ASSERT_TRUE(store_->Resolve(Ref("one:1")).ok());
  auto two = store_->ImportOciLayout(Layout(Image({big2})), Ref("two:1"));
  ASSERT_TRUE(two.ok()) << two.error().message;
  auto list = store_->List();
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].reference, "docker.io/library/two:1");
  EXPECT_LE(*store_->UsedBytes(), 1u << 20);
  ASSERT_TRUE(store_->ImportOciLayout(Layout(Image({big3})), Ref("three:1")).ok());
  EXPECT_FALSE(store_->Resolve(Ref("two:1")).ok());
}

// A box on a stored image holds its in-use mark (store_lease.h) the whole time it runs.
TEST_F(StoreTest, RemovingAnImageInUseByABoxIsRefusedUntilTheBoxIsGone) {
  ASSERT_TRUE(store_->ImportOciLayout(Layout(Image({base_, app_})), Ref("busy:1")).ok());
  auto root = store_->Resolve(Ref("busy:1"));
  ASSERT_TRUE(root.ok());
  {
    auto lease = ImageLease::Take(root->layers);
    ASSERT_TRUE(lease.ok()) << lease.error().message;
    ASSERT_TRUE(lease->held());
    auto rm = store_->Remove(Ref("busy:1"));
    ASSERT_FALSE(rm.ok());
    EXPECT_NE(rm.error().message.find("is in use by a running box"), std::string::npos) << rm.error().message;
    EXPECT_TRUE(store_->Resolve(Ref("busy:1")).ok());
    EXPECT_TRUE(store_->Prune().ok());
    EXPECT_EQ(CountEntries(store_->root() + "/layers/sha256"), 2);
  }
  auto rm = store_->Remove(Ref("busy:1"));
  ASSERT_TRUE(rm.ok()) << rm.error().message;
  EXPECT_EQ(CountEntries(store_->root() + "/layers/sha256"), 0);
  EXPECT_EQ(CountEntries(store_->root() + "/meta/inuse"), 0) << "a mark no box holds is removed";
}

TEST_F(StoreTest, LayersOutsideAStoreNeedNoMark) {
  auto lease = ImageLease::Take({scratch_.path() + "/some/rootfs", "/srv/layer"});
  ASSERT_TRUE(lease.ok());
  EXPECT_FALSE(lease->held());
}

TEST_F(StoreTest, CacheBoundNeverEvictsAnImageInUseAndGcKeepsTheLayersOfAMovedTag) {
  std::mt19937 gen(7);
  std::string noise(400 << 10, '\0');
  for (auto& c : noise) c = static_cast<char>(gen());
  std::string big = TarBuilder().File("one", noise).Finish();
  store_ = Reopen(1 << 20);  // room for one such image, not two
  ASSERT_TRUE(store_->ImportOciLayout(Layout(Image({big})), Ref("one:1")).ok());
  auto one = store_->Resolve(Ref("one:1"));
  ASSERT_TRUE(one.ok());
  auto lease = ImageLease::Take(one->layers);
  ASSERT_TRUE(lease.ok() && lease->held());
  std::string big2 = noise;
  big2[0] ^= 1;
  ASSERT_TRUE(store_->ImportOciLayout(Layout(Image({TarBuilder().File("two", big2).Finish()})), Ref("two:1")).ok());
  EXPECT_EQ(store_->List()->size(), 2u) << "the image in use stays, over the bound";
  // The tag moves to other content while the box still runs on the old layers: they stay.
  ASSERT_TRUE(store_->ImportOciLayout(Layout(Image({base_})), Ref("one:1")).ok());
  struct stat st {};
  EXPECT_EQ(::stat(one->layers[0].c_str(), &st), 0) << "GC removed a layer a running box is built from";
  *lease = ImageLease();  // the box is gone
  ASSERT_TRUE(store_->Prune().ok());
  EXPECT_NE(::stat(one->layers[0].c_str(), &st), 0) << "once the box is gone, its unreferenced layer goes";
}

// A pull's resumable dir (Store::PullDirFor) outlives a killed pull and every clean-up but prune.
TEST_F(StoreTest, AResumablePullDirSurvivesImportsAndRmButNotPrune) {
  {
    auto dir = store_->PullDirFor(Ref("r:1"));
    ASSERT_TRUE(dir.ok()) << dir.error().message;
    testing::WriteTo(dir->path() + "/kept", "verified blob");
    dir->Keep();  // as a killed pull leaves it
  }
  ASSERT_TRUE(store_->ImportOciLayout(Layout(Image({base_})), Ref("a:1")).ok());
  ASSERT_TRUE(store_->Remove(Ref("a:1")).ok());
  auto again = store_->PullDirFor(Ref("r:1"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(testing::ReadFrom(again->path() + "/kept"), "verified blob");
  again->Keep();
  auto p = store_->Prune();
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->temp_removed, 1);
  EXPECT_EQ(CountEntries(store_->root() + "/tmp"), 0);
}

TEST_F(StoreTest, ConcurrentImportsOfOneImageBothSucceedAndUnpackOnce) {
  std::string dir = Layout(Image({base_, app_}));
  pid_t child = ::fork();
  if (child == 0) {
    auto s = Reopen();
    ::_exit(s->ImportOciLayout(dir, Ref("c:1")).ok() ? 0 : 1);
  }
  auto mine = store_->ImportOciLayout(dir, Ref("c:1"));
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(mine.ok()) << mine.error().message;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(CountEntries(store_->root() + "/layers/sha256"), 2);
  EXPECT_EQ(store_->List()->size(), 1u);
}

// A `docker save` archive, classic layout: manifest.json, <hex>.json config, <id>/layer.tar.
TEST_F(StoreTest, DockerSaveArchiveImportsUnderItsRepoTags) {
  LayoutImage img = Image({base_});
  nlohmann::json config = {{"architecture", HostArchitecture()}, {"os", "linux"},
                           {"config", {{"Env", {"PATH=/usr/bin"}}}},
                           {"rootfs", {{"type", "layers"}, {"diff_ids", {DigestOf(base_)}}}}};
  std::string cj = config.dump();
  std::string chex = DigestOf(cj).substr(7);
  nlohmann::json manifest = {{{"Config", chex + ".json"}, {"RepoTags", {"llm-sandbox/test:1", "llm-sandbox/test:alias"}},
                              {"Layers", {"abc/layer.tar"}}}};
  std::string archive = TarBuilder()
                            .File("manifest.json", manifest.dump())
                            .File(chex + ".json", cj)
                            .Dir("abc/")
                            .File("abc/layer.tar", base_)
                            .Finish();
  std::string path = scratch_.path() + "/saved.tar";
  testing::WriteTo(path, archive);
  auto roots = store_->ImportDockerArchive(path, std::nullopt);
  ASSERT_TRUE(roots.ok()) << roots.error().message;
  ASSERT_EQ(roots->size(), 2u);
  auto r = store_->Resolve(Ref("llm-sandbox/test:alias"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*ReadImageFile(r->layers, "/etc/os-release", 4096), "PRETTY_NAME=\"Test Linux 1\"\n");
  EXPECT_EQ(CountEntries(store_->root() + "/tmp"), 0);
}

TEST_F(StoreTest, DockerArchiveWithoutNameNeedsOne) {
  nlohmann::json manifest = {{{"Config", "c.json"}, {"Layers", nlohmann::json::array()}}};
  std::string path = scratch_.path() + "/noname.tar";
  testing::WriteTo(path, TarBuilder().File("manifest.json", manifest.dump()).File("c.json", "{}").Finish());
  auto r = store_->ImportDockerArchive(path, std::nullopt);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("--name"), std::string::npos) << r.error().message;
}

TEST_F(StoreTest, DockerArchiveMemberOutsideTheArchiveIsRefused) {
  nlohmann::json manifest = {{{"Config", "../../../../etc/passwd"}, {"RepoTags", {"x:1"}}, {"Layers", nlohmann::json::array()}}};
  std::string path = scratch_.path() + "/escape.tar";
  testing::WriteTo(path, TarBuilder().File("manifest.json", manifest.dump()).Finish());
  auto r = store_->ImportDockerArchive(path, std::nullopt);
  ASSERT_FALSE(r.ok());  // RESOLVE_IN_ROOT keeps "../" inside the unpacked archive, where it is absent
}

TEST_F(StoreTest, StoreDirectoriesAreNotWritableByOthers) {
  for (const char* d : {"", "/blobs/sha256", "/layers/sha256", "/tmp"}) {
    struct stat st {};
    ASSERT_EQ(::stat((store_->root() + d).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 022, 0u) << d;
  }
}

}  // namespace
}  // namespace lsb::image
