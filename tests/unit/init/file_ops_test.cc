// init's file operations (src/init/file_ops.h) run in this process against a scratch directory:
// what each op does, and what it refuses (links, FIFOs, "..", bounds). The worker's confinement
// and relay are covered end to end by tests/integration/test_box_files.py.
#include "init/file_ops.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "protocol/frame.h"
#include "protocol/messages.h"

namespace lsb::init {
namespace {

using protocol::FileOp;
using protocol::FileOpKind;
using protocol::FileReply;
using protocol::FileStatus;

class FileOps : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lsb-file-ops-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    char real[PATH_MAX];
    ASSERT_NE(::realpath(tmpl, real), nullptr);
    root_ = real;
  }
  void TearDown() override { (void)std::system(("rm -rf '" + root_ + "'").c_str()); }

  struct Answer {
    FileReply reply;
    std::string data;
  };
  // Runs `op` with `input` on a pipe; the frames it writes are decoded from a temp file.
  Answer Run(FileOp op, const std::string& input = "") {
    op.data_bytes = input.size();
    int in[2];
    EXPECT_EQ(::pipe(in), 0);
    std::thread feed([&] {
      (void)!::write(in[1], input.data(), input.size());
      ::close(in[1]);
    });
    std::string out_path = root_ + ".out";
    int out = ::open(out_path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    InputReader reader(in[0]);
    ReplyWriter writer(out);
    EXPECT_TRUE(writer.Finish(DoFileOp(op, reader, writer)).ok());
    feed.join();
    ::close(in[0]);
    ::close(out);
    std::ifstream f(out_path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    ::unlink(out_path.c_str());
    protocol::FrameDecoder dec;
    dec.Feed(ss.str());
    Answer a;
    for (;;) {
      auto fr = dec.Next();
      if (!fr.ok() || !*fr) break;
      if ((*fr)->type == protocol::FrameType::kFileChunk) a.data += (*fr)->payload;
      if ((*fr)->type == protocol::FrameType::kFileReply) a.reply = protocol::ParseMessage<FileReply>((*fr)->payload);
    }
    return a;
  }
  FileOp Op(FileOpKind kind, const std::string& rel) {
    FileOp op;
    op.op = kind;
    op.path = root_ + rel;
    return op;
  }
  void Put(const std::string& rel, const std::string& data) { std::ofstream(root_ + rel, std::ios::binary) << data; }
  bool Exists(const std::string& rel) {
    struct stat st;
    return ::lstat((root_ + rel).c_str(), &st) == 0;
  }
  std::string root_;
};

TEST_F(FileOps, WriteMakesParentsAndReadReturnsTheBytes) {
  std::string data;
  for (int i = 0; i < 3000; ++i) data += static_cast<char>(i % 256);
  EXPECT_EQ(Run(Op(FileOpKind::kWrite, "/a/b/f.bin"), data).reply.status, FileStatus::kOk);
  FileOp read = Op(FileOpKind::kRead, "/a/b/f.bin");
  read.max_bytes = 1 << 20;
  Answer a = Run(read);
  EXPECT_EQ(a.reply.status, FileStatus::kOk);
  EXPECT_EQ(a.data, data);
  EXPECT_EQ(a.reply.total, data.size());
  read.max_bytes = 10;
  a = Run(read);
  EXPECT_EQ(a.reply.status, FileStatus::kTooLarge) << a.reply.message;
  EXPECT_EQ(a.data, "");
}

TEST_F(FileOps, NoLinkIsFollowedAnywhereInAPath) {
  ::mkdir((root_ + "/real").c_str(), 0755);
  ASSERT_EQ(::symlink((root_ + "/real").c_str(), (root_ + "/link").c_str()), 0);
  Answer w = Run(Op(FileOpKind::kWrite, "/link/f"), "data");
  EXPECT_EQ(w.reply.status, FileStatus::kInvalid);
  EXPECT_NE(w.reply.message.find("symbolic link"), std::string::npos) << w.reply.message;
  EXPECT_FALSE(Exists("/real/f"));
  Put("/real/secret", "s");
  FileOp read = Op(FileOpKind::kRead, "/link/secret");
  read.max_bytes = 100;
  EXPECT_EQ(Run(read).reply.status, FileStatus::kInvalid);
  // The last component too: a link to a file is not read through, nor written through.
  ASSERT_EQ(::symlink((root_ + "/real/secret").c_str(), (root_ + "/flink").c_str()), 0);
  read.path = root_ + "/flink";
  EXPECT_NE(Run(read).reply.status, FileStatus::kOk);
  EXPECT_NE(Run(Op(FileOpKind::kWrite, "/flink"), "x").reply.status, FileStatus::kOk);
  std::ifstream f(root_ + "/real/secret");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(f), {}), "s");
}

TEST_F(FileOps, FifosAndDotDotAreRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo((root_ + "/fifo").c_str(), 0644), 0);
  FileOp read = Op(FileOpKind::kRead, "/fifo");
  read.max_bytes = 100;
  Answer a = Run(read);
  EXPECT_EQ(a.reply.status, FileStatus::kInvalid);
  EXPECT_NE(a.reply.message.find("not a regular file (a fifo)"), std::string::npos) << a.reply.message;
  EXPECT_EQ(Run(Op(FileOpKind::kWrite, "/fifo"), "x").reply.status, FileStatus::kInvalid);
  Answer dots = Run(Op(FileOpKind::kWrite, "/a/../b"), "x");
  EXPECT_EQ(dots.reply.status, FileStatus::kInvalid);
  EXPECT_NE(dots.reply.message.find("not normalized"), std::string::npos);
  EXPECT_EQ(Run(Op(FileOpKind::kStat, "//x")).reply.status, FileStatus::kInvalid);
}

TEST_F(FileOps, ListIsSortedTypedAndBounded) {
  Put("/b.txt", "12345");
  ::mkdir((root_ + "/a").c_str(), 0700);
  ASSERT_EQ(::symlink("/etc/passwd", (root_ + "/c").c_str()), 0);
  FileOp list = Op(FileOpKind::kList, "");
  Answer a = Run(list);
  ASSERT_EQ(a.reply.status, FileStatus::kOk) << a.reply.message;
  ASSERT_EQ(a.reply.entries.size(), 3u);
  EXPECT_EQ(a.reply.entries[0].name, "a");
  EXPECT_EQ(a.reply.entries[0].type, "dir");
  EXPECT_EQ(a.reply.entries[0].mode, 0700u);
  EXPECT_EQ(a.reply.entries[1].size, 5u);
  EXPECT_EQ(a.reply.entries[2].type, "symlink");
  EXPECT_EQ(a.reply.entries[2].target, "/etc/passwd");
  EXPECT_FALSE(a.reply.truncated);
  list.max_entries = 2;
  a = Run(list);
  EXPECT_EQ(a.reply.entries.size(), 2u);
  EXPECT_TRUE(a.reply.truncated);
  EXPECT_EQ(a.reply.total, 3u);
  EXPECT_NE(a.reply.message.find("the first 2 by name are listed"), std::string::npos) << a.reply.message;
  EXPECT_EQ(Run(Op(FileOpKind::kList, "/b.txt")).reply.status, FileStatus::kNotADirectory);
}

TEST_F(FileOps, StatMkdirRenameRemove) {
  FileOp mk = Op(FileOpKind::kMkdir, "/x/y");
  EXPECT_EQ(Run(mk).reply.status, FileStatus::kNotFound);
  mk.parents = true;
  EXPECT_EQ(Run(mk).reply.status, FileStatus::kOk);
  mk.parents = false;
  EXPECT_EQ(Run(mk).reply.status, FileStatus::kExists);
  Put("/x/y/f", "1");
  Answer st = Run(Op(FileOpKind::kStat, "/x/y/f"));
  ASSERT_EQ(st.reply.entries.size(), 1u);
  EXPECT_EQ(st.reply.entries[0].type, "file");
  FileOp mv = Op(FileOpKind::kRename, "/x/y/f");
  mv.to = root_ + "/x/g";
  EXPECT_EQ(Run(mv).reply.status, FileStatus::kOk);
  EXPECT_TRUE(Exists("/x/g"));
  FileOp rm = Op(FileOpKind::kRemove, "/x");
  EXPECT_EQ(Run(rm).reply.status, FileStatus::kNotEmpty);
  rm.recursive = true;
  EXPECT_EQ(Run(rm).reply.status, FileStatus::kOk);
  EXPECT_FALSE(Exists("/x"));
  EXPECT_EQ(Run(rm).reply.status, FileStatus::kNotFound);
}

TEST_F(FileOps, RemoveDoesNotFollowALinkOutOfTheTree) {
  ::mkdir((root_ + "/keep").c_str(), 0755);
  Put("/keep/k", "k");
  ::mkdir((root_ + "/gone").c_str(), 0755);
  ASSERT_EQ(::symlink((root_ + "/keep").c_str(), (root_ + "/gone/l").c_str()), 0);
  FileOp rm = Op(FileOpKind::kRemove, "/gone");
  rm.recursive = true;
  EXPECT_EQ(Run(rm).reply.status, FileStatus::kOk);
  EXPECT_TRUE(Exists("/keep/k"));
}

std::string Record(char kind, const std::string& path, const std::string& data) {
  return std::string(1, kind) + " " + std::to_string(path.size()) + " " + std::to_string(data.size()) + "\n" + path + data;
}

TEST_F(FileOps, UnpackCollectTreeAndManifest) {
  std::string in = Record('d', root_ + "/w", "") + Record('f', root_ + "/w/a.txt", "alpha") +
                   Record('x', root_ + "/w/sub/run.sh", "#!/bin/sh\n");
  EXPECT_EQ(Run(Op(FileOpKind::kUnpack, ""), in).reply.status, FileStatus::kOk);
  struct stat st;
  ASSERT_EQ(::stat((root_ + "/w/sub/run.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);

  FileOp collect = Op(FileOpKind::kCollect, "");
  collect.patterns = {root_ + "/w/*.txt", root_ + "/none/*"};
  collect.max_entries = 10;
  collect.max_bytes = collect.max_file_bytes = 1000;
  Answer c = Run(collect);
  EXPECT_EQ(c.data, Record('f', root_ + "/w/a.txt", "alpha") + Record('n', root_ + "/none/*", "no file matches"));

  FileOp tree = Op(FileOpKind::kTree, "/w");
  tree.max_entries = 10;
  tree.max_bytes = 1000;
  Answer t = Run(tree);
  EXPECT_EQ(t.data, Record('f', root_ + "/w/a.txt", "alpha") + Record('d', root_ + "/w/sub", "") +
                        Record('x', root_ + "/w/sub/run.sh", "#!/bin/sh\n"));
  tree.max_entries = 2;
  EXPECT_EQ(Run(tree).reply.status, FileStatus::kTooLarge);
  EXPECT_EQ(Run(Op(FileOpKind::kTree, "/w/a.txt")).reply.status, FileStatus::kNotADirectory);

  FileOp m = Op(FileOpKind::kManifest, "");
  m.patterns = {root_ + "/w"};
  m.max_entries = 10;
  m.max_bytes = m.max_file_bytes = 1000;
  Answer man = Run(m);
  ASSERT_EQ(man.reply.status, FileStatus::kOk);
  EXPECT_NE(man.data.find(Record('f', root_ + "/w/a.txt",
                                 "644 5 8ed3f6ad685b959ead7022518e1af76cd816f8e8ec7ccdda1ed4018e8f2223f8\nalpha")),
            std::string::npos)
      << man.data;
  m.max_entries = 1;
  EXPECT_EQ(Run(m).reply.status, FileStatus::kTooLarge);
}

}  // namespace
}  // namespace lsb::init
