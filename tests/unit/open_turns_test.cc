// Session opens in flight (issue 35, server/open_turns.h): a burst's opens take turns in arrival
// order, width at a time; an open in flight too long stops holding its place; a wait that runs out
// goes on without a turn (the gate orders, it never refuses); a shutdown stops the waiters.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "server/open_turns.h"

namespace lsb::server {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

sched::SessionQueueLimits Limits(milliseconds max_wait) { return {256, max_wait}; }

TEST(OpenTurns, WidthAtATimeInArrivalOrder) {
  OpenTurns gate(2, milliseconds(60000), Limits(milliseconds(10000)));
  auto a = gate.Await();
  auto b = gate.Await();
  ASSERT_TRUE(a.go && a.turn && b.go && b.turn);
  EXPECT_EQ(a.position, 0u);  // free places: no wait
  std::vector<int> order;
  std::mutex mu;
  std::vector<std::thread> waiters;
  std::vector<OpenTurns::Outcome> got(3);
  for (int i = 0; i < 3; ++i) {
    waiters.emplace_back([&, i] {
      got[i] = gate.Await();
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(i);
      got[i].turn.reset();  // its open is done at once
    });
    std::this_thread::sleep_for(milliseconds(30));  // arrive one after another
  }
  std::this_thread::sleep_for(milliseconds(50));
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_TRUE(order.empty()) << "a waiter went while both places were held";
  }
  a.turn.reset();
  for (auto& t : waiters) t.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
  for (const auto& g : got) EXPECT_TRUE(g.go);
  EXPECT_GE(got[0].position, 1u);
}

TEST(OpenTurns, AnOpenInFlightTooLongStopsHoldingItsPlace) {
  OpenTurns gate(1, milliseconds(50), Limits(milliseconds(10000)));
  auto slow = gate.Await();
  ASSERT_TRUE(slow.turn);
  auto start = Clock::now();
  auto next = gate.Await();  // the slow one ages past 50 ms; the line re-checks every 100 ms
  auto waited = Clock::now() - start;
  EXPECT_TRUE(next.go && next.turn);
  EXPECT_GE(waited, milliseconds(40));
  EXPECT_LT(waited, milliseconds(2000));
}

TEST(OpenTurns, AWaitThatRunsOutGoesOnWithoutATurn) {
  OpenTurns gate(1, milliseconds(60000), Limits(milliseconds(80)));
  auto held = gate.Await();
  auto late = gate.Await();
  EXPECT_TRUE(late.go);
  EXPECT_FALSE(late.turn);  // it holds no place: the width is still the held one's
  EXPECT_EQ(late.position, 1u);
  held.turn.reset();
  auto after = gate.Await();
  EXPECT_TRUE(after.turn);
  EXPECT_EQ(after.position, 0u);
}

TEST(OpenTurns, ShutdownStopsTheWaiters) {
  OpenTurns gate(1, milliseconds(60000), Limits(milliseconds(10000)));
  auto held = gate.Await();
  std::atomic<bool> went{true};
  std::thread waiter([&] { went = gate.Await().go; });
  std::this_thread::sleep_for(milliseconds(50));
  gate.Shutdown();
  waiter.join();
  EXPECT_FALSE(went);
}

}  // namespace
}  // namespace lsb::server
