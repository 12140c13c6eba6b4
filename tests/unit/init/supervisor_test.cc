#include "init/supervisor.h"

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "init/stream.h"

namespace lsb::init {
namespace {

using protocol::ExecStatus;
using protocol::ExitReport;

ExitReport Fill(const RunOutcome& o) {
  ExitReport r;
  FillStatus(o, r);
  return r;
}

TEST(FillStatus, ExitCodesSignalsAndReasons) {
  RunOutcome ok{.exited = true, .wait_status = 0};
  EXPECT_EQ(Fill(ok).status, ExecStatus::kOk);
  RunOutcome err{.exited = true, .wait_status = 3 << 8};
  EXPECT_EQ(Fill(err).status, ExecStatus::kError);
  EXPECT_EQ(Fill(err).exit_code, 3);
  RunOutcome sig{.exited = true, .wait_status = SIGSEGV};
  EXPECT_EQ(Fill(sig).status, ExecStatus::kKilled);
  EXPECT_EQ(Fill(sig).exit_code, 128 + SIGSEGV);
  RunOutcome tmo{.timed_out = true, .exited = true, .wait_status = SIGKILL};
  EXPECT_EQ(Fill(tmo).status, ExecStatus::kTimeout);
  EXPECT_EQ(Fill(tmo).signal, SIGKILL);
  // One convention (issue 16): a timeout is exit code 124, whichever signal ended the program, and
  // also when it caught SIGTERM and exited on its own within the grace.
  EXPECT_EQ(Fill(tmo).exit_code, 124);
  RunOutcome tmo_term{.timed_out = true, .exited = true, .wait_status = SIGTERM};
  EXPECT_EQ(Fill(tmo_term).exit_code, 124);
  EXPECT_EQ(Fill(tmo_term).signal, SIGTERM);
  RunOutcome tmo_exit{.timed_out = true, .exited = true, .wait_status = 1 << 8};
  EXPECT_EQ(Fill(tmo_exit).status, ExecStatus::kTimeout);
  EXPECT_EQ(Fill(tmo_exit).exit_code, 124);
  EXPECT_EQ(Fill(tmo_exit).signal, 0);
  RunOutcome flood{.output_limited = true, .exited = true, .wait_status = SIGKILL};
  EXPECT_EQ(Fill(flood).status, ExecStatus::kOutputLimit);
  RunOutcome denied{.exec_failed = true, .exec_errno = EACCES, .exited = true, .wait_status = 127 << 8};
  EXPECT_EQ(Fill(denied).status, ExecStatus::kDenied);
  EXPECT_EQ(Fill(denied).exit_code, 126);
  RunOutcome missing{.exec_failed = true, .exec_errno = ENOENT, .exited = true, .wait_status = 127 << 8};
  EXPECT_EQ(Fill(missing).status, ExecStatus::kError);
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
  EXPECT_TRUE(eof.error().IsEof()) << eof.error().message;
  close(sp[1]);
}

// Issue 15, class 5: a host that does not read never blocks init (its timer must fire).
TEST(Stream, NeverBlocksOnAHostThatDoesNotReadAndKeepsItsQueueBounded) {
  int sp[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
  int small = 4096;
  setsockopt(sp[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  Stream writer(sp[0], sp[0]);
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(writer.Send(protocol::FrameType::kStdout, std::string(512 * 1024, 'x')).ok());
  EXPECT_TRUE(writer.output_paused());  // the run loop stops reading the program's pipes
  size_t offered = 0;
  while (writer.Offer(protocol::FrameType::kEvent, std::string(1000, 'e'))) ++offered;
  EXPECT_GE(writer.pending(), kOutBufferLimit);
  EXPECT_LT(writer.pending(), kOutBufferLimit + 2000);  // refused at the bound, not queued
  EXPECT_GT(offered, 0u);
  ASSERT_TRUE(writer.Send(protocol::FrameType::kExit, "{}").ok());  // control frames always queue
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  EXPECT_FALSE(writer.Drain(50));  // nobody reads: gives up at its deadline

  // Once the host reads, every queued frame arrives whole and in order.
  std::thread reader([&] {
    Stream r(sp[1], sp[1]);
    size_t events = 0, data = 0;
    for (;;) {
      auto f = r.Read();
      ASSERT_TRUE(f.ok()) << f.error().message;
      if (f->type == protocol::FrameType::kStdout) data += f->payload.size();
      if (f->type == protocol::FrameType::kEvent) ++events;
      if (f->type == protocol::FrameType::kExit) break;
    }
    EXPECT_EQ(data, 512u * 1024);
    EXPECT_EQ(events, offered);
  });
  EXPECT_TRUE(writer.Drain(10000));
  reader.join();
  close(sp[0]);
  close(sp[1]);
}

}  // namespace
}  // namespace lsb::init
