// The decoder of Docker's multiplexed attach stream (8-byte frame headers).
#include <gtest/gtest.h>

#include "runtime/docker/stream_demux.h"

namespace lsb::docker {
namespace {

TEST(DockerStreamDemux, SplitsStdoutAndStderr) {
  StreamDemuxer d;
  d.Feed(EncodeMuxFrame(StdStream::kStdout, "frame-bytes") + EncodeMuxFrame(StdStream::kStderr, "diag\n"));
  auto a = d.Next();
  ASSERT_TRUE(a.ok() && a->has_value());
  EXPECT_EQ((*a)->stream, StdStream::kStdout);
  EXPECT_EQ((*a)->payload, "frame-bytes");
  auto b = d.Next();
  ASSERT_TRUE(b.ok() && b->has_value());
  EXPECT_EQ((*b)->stream, StdStream::kStderr);
  EXPECT_EQ((*b)->payload, "diag\n");
  auto c = d.Next();
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->has_value());
}

TEST(DockerStreamDemux, ByteAtATimeAndBinaryPayload) {
  std::string payload("\x00\x01\xff\n\x02", 5);
  std::string wire = EncodeMuxFrame(StdStream::kStdout, payload) + EncodeMuxFrame(StdStream::kStdout, "");
  StreamDemuxer d;
  std::vector<std::string> got;
  for (char c : wire) {
    d.Feed(std::string_view(&c, 1));
    for (;;) {
      auto f = d.Next();
      ASSERT_TRUE(f.ok());
      if (!f->has_value()) break;
      got.push_back((*f)->payload);
    }
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], payload);
  EXPECT_EQ(got[1], "");
  EXPECT_EQ(d.buffered(), 0u);
}

TEST(DockerStreamDemux, LargeFrameLengthIsBigEndian) {
  std::string big(70000, 'x');
  std::string wire = EncodeMuxFrame(StdStream::kStdout, big);
  EXPECT_EQ(static_cast<unsigned char>(wire[5]), 0x01);  // 70000 = 0x00011170
  EXPECT_EQ(static_cast<unsigned char>(wire[6]), 0x11);
  EXPECT_EQ(static_cast<unsigned char>(wire[7]), 0x70);
  StreamDemuxer d;
  d.Feed(wire);
  auto f = d.Next();
  ASSERT_TRUE(f.ok() && f->has_value());
  EXPECT_EQ((*f)->payload.size(), big.size());
}

TEST(DockerStreamDemux, CorruptHeaderIsAnError) {
  StreamDemuxer d;
  d.Feed(std::string("\x07\x00\x00\x00\x00\x00\x00\x01z", 9));
  EXPECT_FALSE(d.Next().ok());
  StreamDemuxer e;
  e.Feed(std::string("\x01\x00\x01\x00\x00\x00\x00\x01z", 9));
  EXPECT_FALSE(e.Next().ok());
}

}  // namespace
}  // namespace lsb::docker
