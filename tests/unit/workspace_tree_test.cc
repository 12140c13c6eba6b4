// The T op (a directory's tree out of the box, scheduler/workspace_io.h): "not a directory" is a
// status code the in-box driver sets where it finds it, and the host decides on that code alone.
// The driver's own source runs here under the host's python3, spoken to over its wire.
#include <gtest/gtest.h>

#include <string>

#include "image_test_util.h"
#include "scheduler/driver/python_driver.h"
#include "scheduler/workspace_io.h"

namespace lsb::sched {
namespace {

using image::testing::ReadFrom;
using image::testing::ScratchDir;
using image::testing::WriteTo;

// One T op against the driver: its status code and its stderr words (both before the marker).
struct TreeReply {
  int status = -1;
  std::string message;
};

TreeReply RunTreeOp(const ScratchDir& dir, const std::string& top) {
  WriteTo(dir.path() + "/driver.py", PythonDriverSource());
  std::string limits = "100 100000";
  WriteTo(dir.path() + "/in", "MK\nT " + std::to_string(top.size()) + " " + std::to_string(limits.size()) + "\n" +
                                  top + limits);
  std::string cmd = "python3 -I -S '" + dir.path() + "/driver.py' < '" + dir.path() + "/in' > '" + dir.path() +
                    "/out' 2> '" + dir.path() + "/err'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::string out = ReadFrom(dir.path() + "/out"), err = ReadFrom(dir.path() + "/err");
  TreeReply r;
  size_t at = out.rfind("\x1eMK:");
  if (at != std::string::npos) r.status = std::stoi(out.substr(at + 4));
  r.message = err.substr(0, err.find("\x1eMK"));
  return r;
}

TEST(WorkspaceTree, TheDriverSaysNotADirectoryByItsCode) {
  if (std::system("python3 -c pass 2>/dev/null") != 0) GTEST_SKIP() << "no python3 on this host";
  ScratchDir dir;
  WriteTo(dir.path() + "/file.txt", "x");
  TreeReply file = RunTreeOp(dir, dir.path() + "/file.txt");
  EXPECT_EQ(file.status, static_cast<int>(FileOpStatus::kNotADirectory)) << file.message;
  // The words stay what they were before the code existed.
  EXPECT_EQ(file.message, "[Errno 2] not a directory (or a path with a symbolic link in it): " + dir.path() +
                              "/file.txt");
  EXPECT_EQ(RunTreeOp(dir, dir.path() + "/missing").status, static_cast<int>(FileOpStatus::kNotADirectory));
  EXPECT_EQ(RunTreeOp(dir, dir.path()).status, static_cast<int>(FileOpStatus::kOk));
}

TEST(WorkspaceTree, TheHostDecidesOnTheCodeNotTheWords) {
  FileOpResult not_dir{FileOpStatus::kNotADirectory, "", "[Errno 2] not a directory: /tmp/x"};
  Status s = TreeReplyStatus(not_dir, "/tmp/x");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(s.error().message, "no directory /tmp/x in the box ([Errno 2] not a directory: /tmp/x)");
  // The same words under another code are a failure, not "no directory".
  Status failed = TreeReplyStatus({FileOpStatus::kFailed, "", "not a directory"}, "/tmp/x");
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(failed.error().message, "reading /tmp/x in the box failed: not a directory");
  Status big = TreeReplyStatus({FileOpStatus::kTooLarge, "", "/tmp/x has more than 9 entries"}, "/tmp/x");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code, ErrorCode::kResourceExhausted);
  EXPECT_TRUE(TreeReplyStatus({FileOpStatus::kOk, "", ""}, "/tmp/x").ok());
}

}  // namespace
}  // namespace lsb::sched
