// Archives into a box, read on the host (scheduler/archive/archive_in.h): every refusal of a hostile
// archive, every bound, and what a good tar / tar.gz / tar.zst / zip becomes.
#include <sys/stat.h>
#include <zlib.h>

#include <cstring>

#include <gtest/gtest.h>

#include "image_test_util.h"
#include "runtime/exec_result.h"
#include "scheduler/archive/archive_entries.h"
#include "scheduler/archive/archive_in.h"
#include "scheduler/archive/tar_writer.h"
#include "server/json_budget.h"

namespace lsb::sched {
namespace {

using image::testing::Gzip;
using image::testing::TarBuilder;
using image::testing::Zstd;

// A zip written byte by byte, so hostile ones can be made (names, modes, lying sizes).
class ZipBuilder {
 public:
  ZipBuilder& Add(const std::string& name, const std::string& data, bool compress = true, uint32_t unix_mode = 0100644,
                  const std::string& local_name = "") {
    std::string stored = data;
    uint16_t method = 0;
    if (compress) {
      z_stream z{};
      deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
      stored.assign(deflateBound(&z, data.size()) + 16, '\0');
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
      z.avail_in = static_cast<uInt>(data.size());
      z.next_out = reinterpret_cast<Bytef*>(stored.data());
      z.avail_out = static_cast<uInt>(stored.size());
      deflate(&z, Z_FINISH);
      stored.resize(z.total_out);
      deflateEnd(&z);
      method = 8;
    }
    uint32_t crc = crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size()));
    const std::string& lname = local_name.empty() ? name : local_name;
    uint32_t offset = static_cast<uint32_t>(body_.size());
    U32(body_, 0x04034b50); U16(body_, 20); U16(body_, 0); U16(body_, method); U16(body_, 0); U16(body_, 0);
    U32(body_, crc); U32(body_, static_cast<uint32_t>(stored.size())); U32(body_, static_cast<uint32_t>(data.size()));
    U16(body_, static_cast<uint16_t>(lname.size())); U16(body_, 0);
    body_ += lname + stored;
    U32(cd_, 0x02014b50); U16(cd_, (3 << 8) | 20); U16(cd_, 20); U16(cd_, 0); U16(cd_, method); U16(cd_, 0); U16(cd_, 0);
    U32(cd_, crc); U32(cd_, static_cast<uint32_t>(stored.size())); U32(cd_, static_cast<uint32_t>(data.size()));
    U16(cd_, static_cast<uint16_t>(name.size())); U16(cd_, 0); U16(cd_, 0); U16(cd_, 0); U16(cd_, 0);
    U32(cd_, unix_mode << 16); U32(cd_, offset);
    cd_ += name;
    ++count_;
    return *this;
  }
  std::string Finish() const {
    std::string out = body_ + cd_;
    U32(out, 0x06054b50); U16(out, 0); U16(out, 0); U16(out, count_); U16(out, count_);
    U32(out, static_cast<uint32_t>(cd_.size())); U32(out, static_cast<uint32_t>(body_.size())); U16(out, 0);
    return out;
  }

 private:
  static void U16(std::string& s, uint32_t v) { s += static_cast<char>(v & 0xff); s += static_cast<char>((v >> 8) & 0xff); }
  static void U32(std::string& s, uint32_t v) { U16(s, v & 0xffff); U16(s, v >> 16); }
  std::string body_, cd_;
  uint16_t count_ = 0;
};

std::string ProjectTar() {
  return TarBuilder()
      .Dir("./")
      .Dir("pkg/")
      .File("pkg/__init__.py", "")
      .File("pkg/core.py", "def add(a, b):\n    return a + b\n")
      .File("run.sh", "#!/bin/sh\necho hi\n", 04755)  // setuid: stripped, executable kept
      .Finish();
}

void ExpectProject(const UnpackedArchive& a) {
  ASSERT_EQ(a.items.size(), 4u);
  EXPECT_EQ(a.items[0].path, "/tmp/work/pkg");
  EXPECT_EQ(a.items[0].kind, ArchiveItem::Kind::kDir);
  EXPECT_EQ(a.items[2].path, "/tmp/work/pkg/core.py");
  EXPECT_EQ(a.items[2].data, "def add(a, b):\n    return a + b\n");
  EXPECT_FALSE(a.items[2].executable);
  EXPECT_EQ(a.items[3].path, "/tmp/work/run.sh");
  EXPECT_TRUE(a.items[3].executable);
  EXPECT_EQ(a.files, 3u);
  EXPECT_EQ(a.dirs, 1u);
}

TEST(WorkspaceArchive, PlainGzipAndZstdTarsUnpackAlike) {
  std::string tar = ProjectTar();
  for (const std::string& bytes : {tar, Gzip(tar), Zstd(tar)}) {
    auto a = ReadArchive(bytes, "/tmp/work", {});
    ASSERT_TRUE(a.ok()) << a.error().message;
    ExpectProject(*a);
  }
  EXPECT_EQ(ReadArchive(Gzip(tar), "/tmp/work", {})->format, ArchiveFormat::kTarGzip);
  EXPECT_EQ(ReadArchive(Zstd(tar), "/tmp/work", {})->format, ArchiveFormat::kTarZstd);
}

TEST(WorkspaceArchive, ZipStoredAndDeflatedUnpack) {
  std::string zip = ZipBuilder()
                        .Add("pkg/", "", false, 040755)
                        .Add("pkg/__init__.py", "", false)
                        .Add("pkg/core.py", "def add(a, b):\n    return a + b\n")
                        .Add("run.sh", "#!/bin/sh\necho hi\n", true, 0104755)
                        .Finish();
  auto a = ReadArchive(zip, "/tmp/work", {});
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->format, ArchiveFormat::kZip);
  ExpectProject(*a);
}

void ExpectRefused(const std::string& bytes, const std::string& words, const ArchiveLimits& limits = {}) {
  auto a = ReadArchive(bytes, "/tmp/work", limits);
  ASSERT_FALSE(a.ok()) << "accepted an archive that should be refused for: " << words;
  EXPECT_NE(a.error().message.find(words), std::string::npos) << a.error().message;
}

TEST(WorkspaceArchive, AbsoluteNameIsRefusedNamingTheEntry) {
  ExpectRefused(TarBuilder().File("/etc/cron.d/x", "boom").Finish(), "'/etc/cron.d/x' is refused: an absolute name");
}

TEST(WorkspaceArchive, DotDotIsRefused) {
  ExpectRefused(TarBuilder().File("a/../../escape", "x").Finish(), "'a/../../escape' is refused: a '..' component");
}

TEST(WorkspaceArchive, EverySymlinkIsRefused) {
  ExpectRefused(TarBuilder().Symlink("link", "/etc").Finish(), "'link' is refused: a symbolic link");
  ExpectRefused(TarBuilder().Symlink("inside", "pkg").Finish(), "'inside' is refused: a symbolic link");
}

TEST(WorkspaceArchive, HardlinkOutsideTheArchiveIsRefused) {
  ExpectRefused(TarBuilder().Hardlink("passwd", "/etc/passwd").Finish(), "'passwd' is refused: a hard link");
  ExpectRefused(TarBuilder().Hardlink("up", "../x").Finish(), "'up' is refused: a hard link");
}

TEST(WorkspaceArchive, HardlinkToAnEarlierFileBecomesACopy) {
  auto a = ReadArchive(TarBuilder().File("a.txt", "same").Hardlink("b.txt", "a.txt").Finish(), "/tmp/work", {});
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_EQ(a->items.size(), 2u);
  EXPECT_EQ(a->items[1].path, "/tmp/work/b.txt");
  EXPECT_EQ(a->items[1].data, "same");
}

TEST(WorkspaceArchive, DevicesAndFifosAreRefused) {
  ExpectRefused(TarBuilder().Entry("null", '3', "", 0666, "", UINT64_MAX, 1, 3).Finish(), "'null' is refused: a device node");
  ExpectRefused(TarBuilder().Entry("disk", '4', "", 0666, "", UINT64_MAX, 8, 0).Finish(), "'disk' is refused: a device node");
  ExpectRefused(TarBuilder().Entry("pipe", '6').Finish(), "'pipe' is refused: a FIFO");
}

TEST(WorkspaceArchive, SetuidAndSetgidBitsAreStripped) {
  auto a = ReadArchive(TarBuilder().File("s", "x", 06755).File("g", "y", 02644).Finish(), "/tmp/work", {});
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->items[0].executable);   // only "executable or not" survives
  EXPECT_FALSE(a->items[1].executable);  // the box helper writes 0755 or 0644, never a special bit
}

TEST(WorkspaceArchive, EntryCountBound) {
  TarBuilder t;
  for (int i = 0; i < 11; ++i) t.File("f" + std::to_string(i), "");
  ArchiveLimits l;
  l.max_entries = 10;
  ExpectRefused(t.Finish(), "more than 10 entries", l);
}

TEST(WorkspaceArchive, ContentBytesBound) {
  ArchiveLimits l;
  l.max_bytes = 1000;
  ExpectRefused(TarBuilder().File("a", std::string(600, 'a')).File("b", std::string(600, 'b')).Finish(),
                "'b' (600 bytes) takes the archive past its 1000 bytes", l);
  // A size claim alone is refused before its bytes are read.
  ExpectRefused(TarBuilder().Entry("huge", '0', "", 0644, "", 1ull << 31).Unterminated(), "'huge' (2147483648 bytes)", l);
}

TEST(WorkspaceArchive, GzipBombStopsAtTheExpansionRatio) {
  // 32 MiB of zeros in one file: a ~32 KiB archive, a ratio of ~1000.
  std::string bomb = Gzip(TarBuilder().File("zeros", std::string(32u << 20, '\0')).Finish());
  ExpectRefused(bomb, "expands more than 200 times");
}

TEST(WorkspaceArchive, PaxHeaderChainCannotExpandForever) {
  TarBuilder t;
  for (int i = 0; i < 100; ++i) t.Pax({{"comment", std::string(60000, 'x')}});
  ArchiveLimits l;
  l.max_bytes = 1000;
  l.max_entries = 10;
  ExpectRefused(Gzip(t.Finish()), "the tar stream expands past", l);
}

TEST(WorkspaceArchive, FileAndDirectoryOfOneNameIsRefused) {
  ExpectRefused(TarBuilder().File("x", "1").Dir("x/").Finish(), "'x/' is refused: it is a directory and");
  ExpectRefused(TarBuilder().File("x", "1").File("x/y", "2").Finish(), "its parent 'x' is a file");
}

TEST(WorkspaceArchive, ZipWithPathEscapeIsRefused) {
  ExpectRefused(ZipBuilder().Add("../../etc/passwd", "root::0:0").Finish(), "'../../etc/passwd' is refused: a '..'");
  ExpectRefused(ZipBuilder().Add("/abs", "x").Finish(), "'/abs' is refused: an absolute name");
  ExpectRefused(ZipBuilder().Add("..\\evil", "x").Finish(), "a backslash");
}

TEST(WorkspaceArchive, ZipSymlinkAndLyingHeadersAreRefused) {
  ExpectRefused(ZipBuilder().Add("link", "/etc/passwd", false, 0120777).Finish(), "'link' is refused: a symbolic link");
  ExpectRefused(ZipBuilder().Add("good.txt", "x", true, 0100644, "evil.txt").Finish(), "its local header names another file");
  std::string zip = ZipBuilder().Add("a.txt", "hello world").Finish();
  zip[14] ^= 1;  // the local header's CRC is not read; the central one is: corrupt the data instead
  zip[30 + 5] ^= 0x55;
  EXPECT_FALSE(ReadArchive(zip, "/tmp/work", {}).ok());
}

TEST(WorkspaceArchive, NotAnArchiveSaysWhatToSend) {
  ExpectRefused(std::string(1024, 'x'), "send a tar, tar.gz, tar.zst or zip");
  ExpectRefused("", "the archive is empty");
}

// Whether the tar reader calls the archive unreadable is decided on the error's field, set where an
// entry's rule refuses it: an entry's refusal reads as it was made, a broken stream is wrapped.
TEST(WorkspaceArchive, AnEntryRefusalIsPassedOnAndABrokenTarIsCalledUnreadable) {
  auto refused = ReadArchive(TarBuilder().Symlink("link", "/etc").Finish(), "/tmp/work", {});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().field, kArchiveEntryField);
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(refused.error().message.rfind("archive entry 'link' is refused: a symbolic link", 0), 0u)
      << refused.error().message;
  auto broken = ReadArchive(std::string(1024, 'x'), "/tmp/work", {});
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(broken.error().message.rfind("the archive (tar) cannot be read: ", 0), 0u) << broken.error().message;
}

TEST(WorkspaceArchive, TarWriterOutputReadsBack) {
  TarWriter w;
  std::string long_name = std::string(150, 'n') + "/file.txt";
  w.Dir("pkg");
  w.File("pkg/a.py", "print(1)\n", false);
  w.File(long_name, "deep", true);
  auto a = ReadArchive(std::move(w).Finish(), "/tmp/out", {});
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_EQ(a->items.size(), 3u);
  EXPECT_EQ(a->items[1].data, "print(1)\n");
  EXPECT_EQ(a->items[2].path, "/tmp/out/" + long_name);
  EXPECT_TRUE(a->items[2].executable);
}

}  // namespace
}  // namespace lsb::sched

namespace lsb::server {
namespace {

TEST(WorkspaceCollect, ABatchResultOverItsShareTurnsCollectedFilesIntoErrorEntries) {
  ExecResult r;
  r.status = ExecStatus::kOk;
  r.collected = {{"/tmp/a.txt", std::string(4000, 'a'), ""}, {"/tmp/b.bin", std::string(4000, '\xff'), ""}};
  nlohmann::json j = r.ToJson();
  ASSERT_TRUE(j["collected"][1].contains("content_base64"));
  size_t bytes = FitResultJson(j, 6000);
  EXPECT_LE(bytes, 6000u);
  EXPECT_EQ(j["collected"][0]["content"], std::string(4000, 'a'));  // the first still fits
  EXPECT_FALSE(j["collected"][1].contains("content_base64"));
  EXPECT_NE(j["collected"][1]["error"].get<std::string>().find("did not fit its share"), std::string::npos);
}

}  // namespace
}  // namespace lsb::server
