#include "init/output_coalescer.h"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "base/base64.h"
#include "base/utf8.h"

namespace lsb::init {
namespace {

using protocol::FrameType;

struct Sent {
  std::vector<std::pair<FrameType, std::string>> chunks;
  OutputCoalescer::Sink sink() {
    return [this](FrameType t, std::string_view d) { chunks.emplace_back(t, std::string(d)); };
  }
};

// Python's unbuffered print("line", i) writes "line", " ", "0", "\n": one event, not four.
TEST(OutputCoalescer, PiecewiseWritesOfOneLineGoOutAsOneChunk) {
  Sent s;
  OutputCoalescer c(s.sink());
  for (int i = 0; i < 100; ++i)
    for (std::string piece : {std::string("line"), std::string(" "), std::to_string(i), std::string("\n")})
      c.Add(FrameType::kStdout, piece, 1000);
  ASSERT_EQ(s.chunks.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(s.chunks[i].second, "line " + std::to_string(i) + "\n");
  EXPECT_EQ(c.held(), 0u);
}

TEST(OutputCoalescer, SeveralLinesInOneReadAreOneChunkAndTheTailWaits) {
  Sent s;
  OutputCoalescer c(s.sink());
  c.Add(FrameType::kStdout, "a\nb\nprompt> ", 1000);
  ASSERT_EQ(s.chunks.size(), 1u);
  EXPECT_EQ(s.chunks[0].second, "a\nb\n");
  EXPECT_EQ(c.held(), 8u);
  ASSERT_TRUE(c.due_ms().has_value());
  EXPECT_EQ(*c.due_ms(), 1000 + OutputCoalescer::kQuietMs);
  c.FlushIfDue(1000 + OutputCoalescer::kQuietMs - 1);
  EXPECT_EQ(s.chunks.size(), 1u);
  c.FlushIfDue(1000 + OutputCoalescer::kQuietMs);
  ASSERT_EQ(s.chunks.size(), 2u);
  EXPECT_EQ(s.chunks[1].second, "prompt> ");
  EXPECT_FALSE(c.due_ms().has_value());
}

// A program that trickles bytes without a newline is still shown within kMaxHoldMs, and so is
// one that is runnable (it may only be waiting for a CPU in the middle of a line).
TEST(OutputCoalescer, AHeldTailIsNeverHeldLongerThanMaxHold) {
  Sent s;
  OutputCoalescer c(s.sink());
  for (uint64_t t = 0; t < OutputCoalescer::kMaxHoldMs; t += 2) c.Add(FrameType::kStdout, ".", 1000 + t);
  EXPECT_EQ(*c.due_ms(), 1000 + OutputCoalescer::kMaxHoldMs);
  Sent busy;
  OutputCoalescer b(busy.sink());
  b.Add(FrameType::kStdout, "line", 1000);
  EXPECT_EQ(*b.due_ms(true), 1000 + OutputCoalescer::kMaxHoldMs);
  b.FlushIfDue(1000 + OutputCoalescer::kQuietMs, true);
  EXPECT_TRUE(busy.chunks.empty());
  b.Add(FrameType::kStdout, " 0\n", 1000 + OutputCoalescer::kQuietMs + 5);
  ASSERT_EQ(busy.chunks.size(), 1u);
  EXPECT_EQ(busy.chunks[0].second, "line 0\n");
}

TEST(OutputCoalescer, TheOtherStreamAndFlushKeepTheOrder) {
  Sent s;
  OutputCoalescer c(s.sink());
  c.Add(FrameType::kStdout, "out without newline", 1);
  c.Add(FrameType::kStderr, "err\n", 2);
  c.Add(FrameType::kStdout, "partial", 3);
  c.Flush();  // what an alert does first
  ASSERT_EQ(s.chunks.size(), 3u);
  EXPECT_EQ(s.chunks[0], std::make_pair(FrameType::kStdout, std::string("out without newline")));
  EXPECT_EQ(s.chunks[1], std::make_pair(FrameType::kStderr, std::string("err\n")));
  EXPECT_EQ(s.chunks[2], std::make_pair(FrameType::kStdout, std::string("partial")));
}

// A line longer than a chunk is cut at 64 KiB, never inside a UTF-8 character.
TEST(OutputCoalescer, ALongLineIsCutIntoChunksBetweenCharacters) {
  Sent s;
  OutputCoalescer c(s.sink());
  std::string line;
  while (line.size() < 3 * OutputCoalescer::kMaxChunk) line += "\xc3\xa9";  // é, 2 bytes
  line = "x" + line;  // so that 64 KiB falls inside a character
  c.Add(FrameType::kStdout, line, 1);
  c.Flush();
  std::string joined;
  for (const auto& [t, d] : s.chunks) {
    EXPECT_LE(d.size(), OutputCoalescer::kMaxChunk);
    EXPECT_TRUE(IsValidUtf8(d)) << d.size();
    joined += d;
  }
  EXPECT_EQ(joined, line);
  EXPECT_GE(s.chunks.size(), 4u);
}

TEST(Utf8, ValidityIsStrict) {
  EXPECT_TRUE(IsValidUtf8("plain"));
  EXPECT_TRUE(IsValidUtf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));  // é € 😀
  EXPECT_FALSE(IsValidUtf8("\xff"));
  EXPECT_FALSE(IsValidUtf8("\xc3"));              // cut short
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_TRUE(IsValidUtf8(std::string("\0", 1)));
}

TEST(Base64, EncodesEveryByteAndPads) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode(std::string("\x00\xff\xfe", 3)), "AP/+");
}

}  // namespace
}  // namespace lsb::init

namespace lsb {
namespace {

TEST(Utf8, CutAtStepsBackOnlyOverACharacterCutShort) {
  std::string s = "ab\xc3\xa9" "cd";                  // a b é c d
  EXPECT_EQ(Utf8CutAt(s, 3), 2u);                     // inside é: before it
  EXPECT_EQ(Utf8CutAt(s, 4), 4u);                     // after é
  EXPECT_EQ(Utf8CutAt(s, 100), s.size());
  EXPECT_EQ(Utf8CutAt("\xf0\x9f\x98\x80", 3), 3u);    // nothing before the lead: no cut at 0
  EXPECT_EQ(Utf8CutAt("x\xf0\x9f\x98\x80", 4), 1u);   // 😀 cut short
  EXPECT_EQ(Utf8CutAt("\xff\xff\xff\xff", 2), 2u);    // not UTF-8: as asked
}

}  // namespace
}  // namespace lsb
