#include "protocol/frame.h"

#include <gtest/gtest.h>

namespace lsb::protocol {
namespace {

TEST(FrameDecoder, RoundTripsBinaryPayloadsFedByteByByte) {
  std::string payload("a\0b\xff\n", 5);
  std::string wire = EncodeFrame(FrameType::kStdout, payload) + EncodeFrame(FrameType::kExit, "{}");
  FrameDecoder dec;
  std::vector<Frame> frames;
  for (char c : wire) {
    dec.Feed(std::string_view(&c, 1));
    auto next = dec.Next();
    ASSERT_TRUE(next.ok()) << next.error().message;
    if (next->has_value()) frames.push_back(std::move(**next));
  }
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].type, FrameType::kStdout);
  EXPECT_EQ(frames[0].payload, payload);
  EXPECT_EQ(frames[1].type, FrameType::kExit);
  EXPECT_EQ(frames[1].payload, "{}");
}

TEST(FrameDecoder, KnowsThePreemptFrame) {
  FrameDecoder dec;
  dec.Feed(EncodeFrame(FrameType::kPreempt, ""));
  auto next = dec.Next();
  ASSERT_TRUE(next.ok() && next->has_value());
  EXPECT_EQ((*next)->type, FrameType::kPreempt);
  EXPECT_STREQ(FrameTypeName(FrameType::kPreempt), "preempt");
}

TEST(FrameDecoder, RejectsUnknownTypeAndOversizedLength) {
  FrameDecoder unknown;
  unknown.Feed(std::string("\x00\x00\x00\x00\x0d", 5));  // 13: past kUnwatch
  EXPECT_FALSE(unknown.Next().ok());

  FrameDecoder huge;
  huge.Feed(std::string("\xff\xff\xff\x7f\x41", 5));
  auto r = huge.Next();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("exceeds"), std::string::npos);
}

}  // namespace
}  // namespace lsb::protocol
