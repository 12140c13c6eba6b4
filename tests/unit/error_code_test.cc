// Errors carry a kind (base/result.h): callers branch on the code and field, never on message text.
#include <gtest/gtest.h>

#include "base/result.h"

namespace lsb {
namespace {

TEST(ErrorCode, PlainMessageIsUnknownAndKeepsItsText) {
  Error e{"something failed"};
  EXPECT_EQ(e.code, ErrorCode::kUnknown);
  EXPECT_EQ(e.message, "something failed");
  EXPECT_EQ(e.sys_errno, 0);
  EXPECT_TRUE(e.field.empty());
}

TEST(ErrorCode, ErrnoGivesTheKind) {
  EXPECT_EQ(Error::FromErrno("open /x", ENOENT).code, ErrorCode::kNotFound);
  EXPECT_EQ(Error::FromErrno("mount", EPERM).code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(Error::FromErrno("write", ENOSPC).code, ErrorCode::kResourceExhausted);
  EXPECT_EQ(Error::FromErrno("connect", ECONNREFUSED).code, ErrorCode::kUnavailable);
  EXPECT_EQ(Error::FromErrno("read", EIO).code, ErrorCode::kIo);
  EXPECT_EQ((Error{"read", ETIMEDOUT}).code, ErrorCode::kTimeout);
}

TEST(ErrorCode, EofAndCancelledAreTestedByKindNotText) {
  EXPECT_TRUE(Error::Eof().IsEof());
  EXPECT_FALSE(Error::Eof().IsCancelled());
  EXPECT_TRUE(Error::Cancelled().IsCancelled());
  // A message that merely reads "eof" is not an end of stream.
  EXPECT_FALSE(Error{"eof"}.IsEof());
}

TEST(ErrorCode, WrapKeepsKindFieldAndErrno) {
  Error e = Error::InvalidArgument("resources.memory", "resources.memory: too small").Wrap("tasks[0]");
  EXPECT_TRUE(e.IsInvalidArgument());
  EXPECT_EQ(e.field, "resources.memory");
  EXPECT_EQ(e.message, "tasks[0]: resources.memory: too small");
  Error s = Error::FromErrno("open", EACCES).Wrap("start box");
  EXPECT_TRUE(s.IsPermissionDenied());
  EXPECT_EQ(s.sys_errno, EACCES);
  Error r = Error::Eof().WithMessage("the stream ended");
  EXPECT_TRUE(r.IsEof());
  EXPECT_EQ(r.message, "the stream ended");
}

TEST(ErrorCode, EveryCodeHasAName) {
  for (ErrorCode c : {ErrorCode::kUnknown, ErrorCode::kInvalidArgument, ErrorCode::kNotFound,
                      ErrorCode::kPermissionDenied, ErrorCode::kResourceExhausted, ErrorCode::kTimeout,
                      ErrorCode::kCancelled, ErrorCode::kEof, ErrorCode::kUnavailable, ErrorCode::kIo})
    EXPECT_STRNE(ErrorCodeName(c), "");
  EXPECT_STREQ(ErrorCodeName(ErrorCode::kEof), "eof");
}

}  // namespace
}  // namespace lsb
