#include "server/waiting_room.h"

#include <gtest/gtest.h>

namespace lsb::server {
namespace {

using Clock = WaitingRoom::Clock;
using std::chrono::milliseconds;

WaitingRoom::Guest GuestAt(uint64_t id, Clock::time_point t0, int deadline_ms) {
  return {id, static_cast<int>(100 + id), t0, t0 + milliseconds(deadline_ms)};
}

TEST(WaitingRoom, ATakenGuestLeavesAndIsNotExpiredLater) {
  WaitingRoom room;
  auto t0 = Clock::now();
  room.Add(GuestAt(1, t0, 10));
  room.Add(GuestAt(2, t0, 20));
  auto g = room.Take(1);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->fd, 101);
  EXPECT_FALSE(room.Take(1).has_value());
  auto expired = room.TakeExpired(t0 + milliseconds(30));
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].id, 2u);
  EXPECT_EQ(room.size(), 0u);
}

TEST(WaitingRoom, OnlyGuestsPastTheirDeadlineExpireOldestFirst) {
  WaitingRoom room;
  auto t0 = Clock::now();
  room.Add(GuestAt(3, t0, 30));
  room.Add(GuestAt(1, t0, 10));
  room.Add(GuestAt(2, t0, 10));
  auto expired = room.TakeExpired(t0 + milliseconds(10));
  ASSERT_EQ(expired.size(), 2u);
  EXPECT_EQ(expired[0].id, 1u);
  EXPECT_EQ(expired[1].id, 2u);
  EXPECT_EQ(room.size(), 1u);
  EXPECT_TRUE(room.TakeExpired(t0 + milliseconds(29)).empty());
}

TEST(WaitingRoom, TheWaitIsUntilTheEarliestDeadlineAndNoneWhenEmpty) {
  WaitingRoom room;
  auto t0 = Clock::now();
  EXPECT_EQ(room.MsUntilNextDeadline(t0), -1);
  room.Add(GuestAt(1, t0, 250));
  room.Add(GuestAt(2, t0, 100));
  EXPECT_EQ(room.MsUntilNextDeadline(t0), 100);
  EXPECT_EQ(room.MsUntilNextDeadline(t0 + std::chrono::microseconds(99500)), 1);  // rounded up
  EXPECT_EQ(room.MsUntilNextDeadline(t0 + milliseconds(500)), 0);
  EXPECT_EQ(room.TakeAll().size(), 2u);
  EXPECT_EQ(room.MsUntilNextDeadline(t0), -1);
}

}  // namespace
}  // namespace lsb::server
