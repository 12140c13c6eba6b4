// Change sets and rich outputs, the host's pure parts: the unified diff, the manifest comparison
// (renames, modes, binary, kind changes), the trailer of the one-shot prelude and the checks of
// an output entry from the box.
#include <gtest/gtest.h>

#include "scheduler/changes/change_set.h"
#include "scheduler/driver/rich_outputs.h"
#include "scheduler/changes/unified_diff.h"

namespace lsb::sched {
namespace {

TEST(UnifiedHunks, EqualTextsHaveNoHunks) { EXPECT_EQ(UnifiedHunks("a\nb\n", "a\nb\n"), std::string()); }

TEST(UnifiedHunks, OneChangedLineWithContext) {
  auto h = UnifiedHunks("1\n2\n3\n4\n5\n6\n7\n8\n", "1\n2\n3\n4\nFIVE\n6\n7\n8\n");
  ASSERT_TRUE(h);
  EXPECT_EQ(*h, "@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+FIVE\n 6\n 7\n 8\n");
}

TEST(UnifiedHunks, MissingFinalNewlineIsMarked) {
  auto h = UnifiedHunks("a", "a\n");
  ASSERT_TRUE(h);
  EXPECT_EQ(*h, "@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n");
}

TEST(UnifiedHunks, AddedToEmptyNamesLineZero) {
  auto h = UnifiedHunks("", "x\ny\n");
  ASSERT_TRUE(h);
  EXPECT_EQ(*h, "@@ -0,0 +1,2 @@\n+x\n+y\n");
}

TEST(UnifiedHunks, TooManyEditsGiveNoDiff) {
  std::string a, b;
  for (int i = 0; i < 100; ++i) a += "a" + std::to_string(i) + "\n", b += "b" + std::to_string(i) + "\n";
  DiffLimits l;
  l.max_edits = 10;
  EXPECT_FALSE(UnifiedHunks(a, b, l));
}

ManifestEntry File(const std::string& data, uint32_t mode = 0644, const std::string& sha = "") {
  ManifestEntry e;
  e.kind = 'f';
  e.mode = mode;
  e.size = data.size();
  e.sha256 = sha.empty() ? "sha-" + data : sha;
  e.data = data;
  return e;
}

TEST(DiffManifests, RenameModeAndBinaryChanges) {
  Manifest before = {{"/w/a.txt", File("same\n")}, {"/w/run.sh", File("x\n")}, {"/w/b.bin", File(std::string("\0a", 2))}};
  Manifest after = {{"/w/c.txt", File("same\n")}, {"/w/run.sh", File("x\n", 0755)}, {"/w/b.bin", File(std::string("\0b", 2))}};
  ChangesLimits l;
  auto j = DiffManifests(before, after, "/w", l);
  ASSERT_EQ(j["files"].size(), 3u) << j.dump();
  std::map<std::string, std::string> kinds;
  for (auto& f : j["files"]) kinds[f["path"]] = f["change"];
  EXPECT_EQ(kinds["/w/c.txt"], "renamed");
  EXPECT_EQ(kinds["/w/run.sh"], "mode_changed");
  EXPECT_EQ(kinds["/w/b.bin"], "modified");
  std::string patch = j["patch"];
  EXPECT_NE(patch.find("rename from a.txt\nrename to c.txt\n"), std::string::npos) << patch;
  EXPECT_NE(patch.find("old mode 100644\nnew mode 100755\n"), std::string::npos) << patch;
  EXPECT_NE(patch.find("GIT binary patch\nliteral 2\n"), std::string::npos) << patch;
  EXPECT_TRUE(j["complete"]);
}

TEST(DiffManifests, FileReplacedByDirectoryIsDeletedThenAdded) {
  ManifestEntry dir;
  dir.kind = 'd';
  dir.mode = 0755;
  dir.sha256 = "-";
  Manifest before = {{"/w/x", File("f\n")}};
  Manifest after = {{"/w/x", dir}, {"/w/x/y", File("g\n")}};
  auto j = DiffManifests(before, after, "/w", ChangesLimits{});
  ASSERT_EQ(j["files"].size(), 3u) << j.dump();
  EXPECT_EQ(j["files"][0]["change"], "deleted");
  EXPECT_EQ(j["files"][1]["kind"], "directory");
  EXPECT_EQ(j["files"][2]["path"], "/w/x/y");
}

TEST(RichOutputs, TrailerIsTakenOnlyAsTheLastLine) {
  std::string err = "warning\n\x1eTOK outputs 3\n";
  EXPECT_EQ(TakeTrailer(err, "TOK", nullptr), 3u);
  EXPECT_EQ(err, "warning\n");
  std::string mid = "\x1eTOK outputs 3\nmore\n";
  EXPECT_FALSE(TakeTrailer(mid, "TOK", nullptr));
  std::string other = "\x1eOTHER outputs 3\n";
  EXPECT_FALSE(TakeTrailer(other, "TOK", nullptr));
}

// The one-shot prelude carries RichOutputSource() and its staging code in one raw triple-quoted
// Python string: the only ''' in the prelude are that string's own quotes.
TEST(RichOutputs, DeferredSourceFitsARawPythonString) {
  const std::string& prelude = OneShotPreludeSource();
  EXPECT_EQ(prelude.rfind("_LSB_RICH = r'''" + RichOutputSource(), 0), 0u);
  size_t quotes = 0;
  for (size_t at = prelude.find("'''"); at != std::string::npos; at = prelude.find("'''", at + 3)) ++quotes;
  EXPECT_EQ(quotes, 2u);
}

TEST(RichOutputs, EntriesAreCheckedAsHostile) {
  EXPECT_EQ(CheckedEntry(R"({"image/png": "AAAA", "text/plain": "f"})", 1000).size(), 2u);
  EXPECT_TRUE(CheckedEntry(R"({"../x": "a"})", 1000).contains("error"));
  EXPECT_TRUE(CheckedEntry(R"({"image/png": 5})", 1000).contains("error"));
  EXPECT_TRUE(CheckedEntry(R"([1])", 1000).contains("error"));
  EXPECT_TRUE(CheckedEntry(R"({"text/plain": "xxxxxxxxxxxxxxxx"})", 10).contains("error"));
  EXPECT_EQ(CheckedEntry(R"({"application/json": {"a": [1]}})", 1000)["application/json"]["a"][0], 1);
}

TEST(WithoutIgnored, DropsMatchingComponentsAndWhatIsUnderThemBelowTheRootOnly) {
  Manifest m;
  for (const char* p : {"/tmp/w/a.py", "/tmp/w/__pycache__", "/tmp/w/__pycache__/a.cpython-311.pyc",
                        "/tmp/w/pkg/b.pyc", "/tmp/w/.pytest_cache/v/x", "/tmp/w/keep.pycx"})
    m[p] = ManifestEntry{};
  Manifest kept = WithoutIgnored(m, "/tmp/w", DefaultChangesIgnore());
  std::vector<std::string> paths;
  for (const auto& [p, _] : kept) paths.push_back(p);
  EXPECT_EQ(paths, (std::vector<std::string>{"/tmp/w/a.py", "/tmp/w/keep.pycx"}));
  // A root that itself matches is not a reason to drop everything under it.
  Manifest under;
  under["/tmp/__pycache__/x"] = ManifestEntry{};
  EXPECT_EQ(WithoutIgnored(under, "/tmp/__pycache__", DefaultChangesIgnore()).size(), 1u);
  EXPECT_EQ(WithoutIgnored(m, "/tmp/w", {}).size(), m.size());
}

}  // namespace
}  // namespace lsb::sched
