// --max-sessions' default from the host's memory (issue 35).
#include <gtest/gtest.h>

#include "server/session_sizing.h"

namespace lsb::server {
namespace {

TEST(SessionSizing, MemoryOverTheBudget) {
  HostCapacity h;
  h.memory_total_bytes = 24ull << 30;  // 24 GiB / 32 MiB
  auto s = SizeMaxSessions(h);
  EXPECT_EQ(s.max_sessions, 768u);
  EXPECT_NE(s.why.find("24576 MiB / 32 MiB per session"), std::string::npos) << s.why;
}

TEST(SessionSizing, ClampedToTheFloorAndTheCeiling) {
  HostCapacity small;
  small.memory_total_bytes = 256ull << 20;
  EXPECT_EQ(SizeMaxSessions(small).max_sessions, kMinSessions);
  EXPECT_NE(SizeMaxSessions(small).why.find("floor"), std::string::npos);
  HostCapacity big;
  big.memory_total_bytes = 1ull << 40;
  EXPECT_EQ(SizeMaxSessions(big).max_sessions, kMaxSessions);
  EXPECT_NE(SizeMaxSessions(big).why.find("capped"), std::string::npos);
}

TEST(SessionSizing, UnknownMemoryIsTheFloor) {
  EXPECT_EQ(SizeMaxSessions(HostCapacity{}).max_sessions, kMinSessions);
}

TEST(SessionSizing, AHundredAtOnceFitOnAFourGibHost) {
  HostCapacity h;
  h.memory_total_bytes = 4ull << 30;
  EXPECT_GE(SizeMaxSessions(h).max_sessions, 100u);
}

TEST(SessionSizing, TheHostIsRead) {
  auto h = ReadHostCapacity();
  EXPECT_GT(h.memory_total_bytes, 0u);
}

}  // namespace
}  // namespace lsb::server
