// The egress proxy's bandwidth cap (src/egress/rate_limiter.h) on a clock the test moves, and the
// proxy flag that sets it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "base/unique_fd.h"
#include "egress/egress_options.h"
#include "egress/rate_limiter.h"

namespace lsb::egress {
namespace {

using std::chrono::milliseconds;
constexpr uint64_t kRate = 1 << 20;  // 1 MiB/s: the bucket holds 128 KiB

TEST(RateLimiter, NoCapGrantsEverything) {
  RateLimiter r(0);
  EXPECT_FALSE(r.capped());
  EXPECT_EQ(r.Reserve(1 << 30).bytes, size_t{1} << 30);
  EXPECT_EQ(AwaitGrant(nullptr, 4096, -1), 4096u);
}

TEST(RateLimiter, AFullBucketGrantsOneBurstThenNamesTheWait) {
  auto t = RateLimiter::Clock::now();
  RateLimiter r(kRate, t);
  EXPECT_EQ(r.Reserve(1 << 20, t).bytes, 128u << 10);  // capped at the burst, not the ask
  RateLimiter::Grant g = r.Reserve(1, t);
  EXPECT_EQ(g.bytes, 0u);
  EXPECT_GE(g.wait, milliseconds(1));
  EXPECT_LE(g.wait, milliseconds(2));
}

TEST(RateLimiter, TheBucketRefillsAtTheRateAndNeverBeyondTheBurst) {
  auto t = RateLimiter::Clock::now();
  RateLimiter r(kRate, t);
  ASSERT_EQ(r.Reserve(1 << 20, t).bytes, 128u << 10);
  // 50 ms later: 50 ms worth is back (1 MiB/s * 0.05 s = 52428.8 bytes).
  EXPECT_EQ(r.Reserve(1 << 20, t + milliseconds(50)).bytes, 52428u);
  // A long quiet spell refills only up to the burst.
  EXPECT_EQ(r.Reserve(1 << 20, t + std::chrono::seconds(60)).bytes, 128u << 10);
}

TEST(RateLimiter, OverAnyWindowTheBytesAreAtMostRateTimesTimePlusTheBurst) {
  auto t0 = RateLimiter::Clock::now();
  RateLimiter r(kRate, t0);
  uint64_t moved = 0;
  auto t = t0;
  // A greedy reader asking for 256 KiB every millisecond for 3 s.
  for (int i = 0; i < 3000; ++i, t += milliseconds(1)) moved += r.Reserve(256 << 10, t).bytes;
  const double seconds = std::chrono::duration<double>(t - t0).count();
  EXPECT_LE(moved, static_cast<uint64_t>(kRate * seconds) + (128u << 10));
  EXPECT_GE(moved, static_cast<uint64_t>(kRate * (seconds - 0.01)));  // and it does get the rate
}

TEST(RateLimiter, WhatWasNotReadGoesBackToTheBucket) {
  auto t = RateLimiter::Clock::now();
  RateLimiter r(kRate, t);
  size_t got = r.Reserve(1 << 20, t).bytes;
  r.Return(got);  // the read found nothing
  EXPECT_EQ(r.Reserve(1 << 20, t).bytes, got);
}

TEST(RateLimiter, ConnectionsShareOneBucket) {
  RateLimiter r(kRate);
  std::vector<std::thread> readers;
  std::atomic<uint64_t> moved{0};
  auto start = RateLimiter::Clock::now();
  for (int i = 0; i < 4; ++i)
    readers.emplace_back([&] {
      uint64_t mine = 0;
      while (mine < (128u << 10)) mine += AwaitGrant(&r, 16 << 10, -1);
      moved += mine;
    });
  for (auto& th : readers) th.join();
  // 512 KiB at 1 MiB/s with 128 KiB of burst: at least 375 ms, whatever the machine's load.
  EXPECT_GE(RateLimiter::Clock::now() - start, milliseconds(370));
  EXPECT_GE(moved.load(), 512u << 10);
}

TEST(RateLimiter, AStopEndsTheWait) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  UniqueFd rd(p[0]), wr(p[1]);
  RateLimiter r(1);  // one byte a second: the bucket's 64 KiB go first, then a long wait
  ASSERT_EQ(AwaitGrant(&r, 64 << 10, rd.get()), 64u << 10);
  ASSERT_EQ(::write(wr.get(), "x", 1), 1);
  auto start = RateLimiter::Clock::now();
  EXPECT_EQ(AwaitGrant(&r, 1, rd.get()), 0u);
  EXPECT_LT(RateLimiter::Clock::now() - start, std::chrono::seconds(1));
}

TEST(EgressBandwidthFlag, TakesSizesPerSecondAndZeroForNoCap) {
  EgressOptions o;
  EXPECT_EQ(o.max_bytes_per_second, 1ull << 30);  // the documented default
  ASSERT_TRUE(ApplyEgressFlag("--egress-max-bandwidth", "10M", o).ok());
  EXPECT_EQ(o.max_bytes_per_second, 10ull << 20);
  ASSERT_TRUE(ApplyEgressFlag("--egress-max-bandwidth", "0", o).ok());
  EXPECT_EQ(o.max_bytes_per_second, 0u);
  auto bad = ApplyEgressFlag("--egress-max-bandwidth", "fast", o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("--egress-max-bandwidth"), std::string::npos) << bad.error().message;
}

}  // namespace
}  // namespace lsb::egress
