#include "server/byte_budget.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace lsb::server {
namespace {

using std::chrono::milliseconds;

TEST(ByteBudget, AReservationReturnsItsBytesWhenItEndsOrShrinks) {
  ByteBudget b(100, milliseconds(10));
  {
    auto r = b.Reserve(60, "x");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(b.used(), 60u);
    r->ShrinkTo(20);
    EXPECT_EQ(b.used(), 20u);
    Reservation moved = std::move(*r);
    EXPECT_EQ(b.used(), 20u);
  }
  EXPECT_EQ(b.used(), 0u);
}

TEST(ByteBudget, ASpentBudgetRefusesAfterItsWaitNamingTheFlag) {
  ByteBudget b(100, milliseconds(20));
  auto held = b.Reserve(80, "first");
  ASSERT_TRUE(held.ok());
  EXPECT_FALSE(b.TryReserve(30).has_value());
  auto r = b.Reserve(30, "a batch of 3 tasks");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kResourceExhausted);
  EXPECT_NE(r.error().message.find("a batch of 3 tasks"), std::string::npos);
  EXPECT_NE(r.error().message.find("--fanout-budget"), std::string::npos);
  EXPECT_EQ(b.used(), 80u);
}

TEST(ByteBudget, AWaiterGetsTheBytesOnceAnotherReleasesThem) {
  ByteBudget b(100, milliseconds(5000));
  auto held = b.Reserve(100, "first");
  ASSERT_TRUE(held.ok());
  std::thread t([&] {
    std::this_thread::sleep_for(milliseconds(50));
    held->Release();
  });
  auto r = b.Reserve(70, "second");
  t.join();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(b.used(), 70u);
}

TEST(ByteBudget, NothingPassesAWaiterInLine) {
  ByteBudget b(100, milliseconds(5000));
  auto held = b.Reserve(90, "first");
  ASSERT_TRUE(held.ok());
  std::atomic<bool> got{false};
  std::thread big([&] {
    auto r = b.Reserve(80, "big");
    got = r.ok();
  });
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(b.TryReserve(5).has_value()) << "the 80-byte waiter is first in line";
  held->Release();
  big.join();
  EXPECT_TRUE(got);
}

TEST(ByteBudget, ARequestLargerThanTheBudgetRunsAloneAndNoBudgetCountsNothing) {
  ByteBudget b(100, milliseconds(10));
  auto r = b.Reserve(1000, "huge");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->bytes(), 100u);
  ByteBudget none(0, milliseconds(10));
  EXPECT_TRUE(none.Reserve(1ull << 40, "any").ok());
  EXPECT_EQ(none.used(), 0u);
}

}  // namespace
}  // namespace lsb::server
