// The kTree reply (a directory's tree out of the box, scheduler/workspace_io.h): "not a directory"
// is a status init's file worker sets where it finds it (tests/unit/init/file_ops_test.cc), and
// the host decides on that status alone, never on the words.
#include <gtest/gtest.h>

#include <string>

#include "protocol/file_ops.h"
#include "scheduler/workspace_io.h"

namespace lsb::sched {
namespace {

using protocol::FileReply;
using protocol::FileStatus;

FileReply Reply(FileStatus status, std::string message) {
  FileReply r;
  r.status = status;
  r.message = std::move(message);
  return r;
}

TEST(WorkspaceTree, TheHostDecidesOnTheStatusNotTheWords) {
  Status s = TreeReplyStatus(Reply(FileStatus::kNotADirectory, "not a directory: /tmp/x"), "/tmp/x");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(s.error().message, "no directory /tmp/x in the box (not a directory: /tmp/x)");
  EXPECT_EQ(TreeReplyStatus(Reply(FileStatus::kNotFound, "gone"), "/tmp/x").error().code, ErrorCode::kNotFound);
  // The same words under another status are a failure, not "no directory".
  Status failed = TreeReplyStatus(Reply(FileStatus::kFailed, "not a directory"), "/tmp/x");
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(failed.error().message, "reading /tmp/x in the box failed: not a directory");
  Status big = TreeReplyStatus(Reply(FileStatus::kTooLarge, "/tmp/x has more than 9 entries"), "/tmp/x");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code, ErrorCode::kResourceExhausted);
  EXPECT_TRUE(TreeReplyStatus(Reply(FileStatus::kOk, ""), "/tmp/x").ok());
}

}  // namespace
}  // namespace lsb::sched
