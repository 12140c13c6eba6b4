// FrameChannel says how a stream ended by the error's kind (IsEof / IsCancelled), not its text.
#include "runtime/frame_channel.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/io.h"
#include "base/unique_fd.h"

namespace lsb {
namespace {

struct Pair {
  UniqueFd host, peer;
};

Pair SocketPair() {
  int sp[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
  return {UniqueFd(sp[0]), UniqueFd(sp[1])};
}

auto Soon() { return FrameChannel::Clock::now() + std::chrono::seconds(5); }

TEST(FrameChannel, PeerClosingAtAFrameBoundaryIsEof) {
  Pair p = SocketPair();
  FrameChannel ch(p.host.get());
  ASSERT_TRUE(WriteAll(p.peer.get(), protocol::EncodeFrame(protocol::FrameType::kStdout, "hi")).ok());
  p.peer.reset();
  auto first = ch.Next(Soon());
  ASSERT_TRUE(first.ok()) << first.error().message;
  ASSERT_TRUE(first->has_value());
  EXPECT_EQ((*first)->payload, "hi");
  auto end = ch.Next(Soon());
  ASSERT_FALSE(end.ok());
  EXPECT_TRUE(end.error().IsEof()) << end.error().message;
  EXPECT_FALSE(end.error().IsCancelled());
}

TEST(FrameChannel, PeerClosingInsideAFrameIsAProtocolErrorNotEof) {
  Pair p = SocketPair();
  FrameChannel ch(p.host.get());
  std::string frame = protocol::EncodeFrame(protocol::FrameType::kStdout, "truncated");
  ASSERT_TRUE(WriteAll(p.peer.get(), frame.substr(0, frame.size() - 3)).ok());
  p.peer.reset();
  auto end = ch.Next(Soon());
  ASSERT_FALSE(end.ok());
  EXPECT_FALSE(end.error().IsEof()) << end.error().message;
}

TEST(FrameChannel, AReadableCancelFdIsCancelled) {
  Pair p = SocketPair();
  int cancel[2];
  ASSERT_EQ(::pipe2(cancel, O_CLOEXEC), 0);
  UniqueFd cancel_r(cancel[0]), cancel_w(cancel[1]);
  FrameChannel ch(p.host.get());
  ch.set_cancel_fd(cancel_r.get());
  ASSERT_EQ(::write(cancel_w.get(), "x", 1), 1);
  auto r = ch.Next(Soon());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().IsCancelled()) << r.error().message;
  EXPECT_FALSE(r.error().IsEof());
}

TEST(ReadFrame, CleanEndBeforeAHeaderIsEofAndInsideAFrameIsNot) {
  Pair p = SocketPair();
  p.peer.reset();
  auto clean = protocol::ReadFrame(p.host.get());
  ASSERT_FALSE(clean.ok());
  EXPECT_TRUE(clean.error().IsEof()) << clean.error().message;

  Pair q = SocketPair();
  std::string frame = protocol::EncodeFrame(protocol::FrameType::kStdout, "abc");
  ASSERT_TRUE(WriteAll(q.peer.get(), frame.substr(0, 2)).ok());
  q.peer.reset();
  auto torn = protocol::ReadFrame(q.host.get());
  ASSERT_FALSE(torn.ok());
  EXPECT_FALSE(torn.error().IsEof()) << torn.error().message;
}

}  // namespace
}  // namespace lsb
