#include "init/supervisor.h"

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <gtest/gtest.h>

#include "init/stream.h"

namespace lsb::init {
namespace {

using protocol::ExitReport;

ExitReport Fill(const RunOutcome& o) {
  ExitReport r;
  FillStatus(o, r);
  return r;
}

TEST(FillStatus, ExitCodesSignalsAndReasons) {
  RunOutcome ok{.exited = true, .wait_status = 0};
  EXPECT_EQ(Fill(ok).status, "ok");
  RunOutcome err{.exited = true, .wait_status = 3 << 8};
  EXPECT_EQ(Fill(err).status, "error");
  EXPECT_EQ(Fill(err).exit_code, 3);
  RunOutcome sig{.exited = true, .wait_status = SIGSEGV};
  EXPECT_EQ(Fill(sig).status, "killed");
  EXPECT_EQ(Fill(sig).exit_code, 128 + SIGSEGV);
  RunOutcome tmo{.timed_out = true, .exited = true, .wait_status = SIGKILL};
  EXPECT_EQ(Fill(tmo).status, "timeout");
  EXPECT_EQ(Fill(tmo).signal, SIGKILL);
  RunOutcome flood{.output_limited = true, .exited = true, .wait_status = SIGKILL};
  EXPECT_EQ(Fill(flood).status, "output_limit");
  RunOutcome denied{.exec_failed = true, .exec_errno = EACCES, .exited = true, .wait_status = 127 << 8};
  EXPECT_EQ(Fill(denied).status, "denied");
  EXPECT_EQ(Fill(denied).exit_code, 126);
  RunOutcome missing{.exec_failed = true, .exec_errno = ENOENT, .exited = true, .wait_status = 127 << 8};
  EXPECT_EQ(Fill(missing).status, "error");
  EXPECT_EQ(Fill(missing).exit_code, 127);
}

TEST(Stream, SplitsDataFramesAt64KiBAndReadsBackFrames) {
  int sp[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
  int big = 1 << 20;
  setsockopt(sp[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  setsockopt(sp[1], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  Stream writer(sp[0], sp[0]);
  std::string data(150 * 1024, 'x');
  ASSERT_TRUE(writer.Send(protocol::FrameType::kStdout, data).ok());
  ASSERT_TRUE(writer.Send(protocol::FrameType::kEvent, std::string(100 * 1024, 'e')).ok());
  Stream reader(sp[1], sp[1]);
  std::vector<size_t> sizes;
  for (int i = 0; i < 4; ++i) {
    auto f = reader.Read();
    ASSERT_TRUE(f.ok()) << f.error().message;
    sizes.push_back(f->payload.size());
  }
  EXPECT_EQ(sizes, (std::vector<size_t>{65536, 65536, 150 * 1024 - 131072, 100 * 1024}));
  close(sp[0]);
  auto eof = reader.Read();
  ASSERT_FALSE(eof.ok());
  EXPECT_EQ(eof.error().message, "eof");
  close(sp[1]);
}

}  // namespace
}  // namespace lsb::init
