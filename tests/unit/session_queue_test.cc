// The session create queue (issue 35): FIFO, bounded in length and in time, woken by a freed slot
// and by shutdown; a reservation holds its slot until dropped.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "scheduler/session/session_queue.h"

namespace lsb::sched {
namespace {

using std::chrono::milliseconds;
using Outcome = SessionQueue::Outcome;

// A cap of `cap` slots with `live` sessions, changed by the test.
struct FakeSessions {
  std::atomic<size_t> cap{2}, live{0};
  SessionQueue::FreeSlots Free() {
    return [this] { return live >= cap ? size_t{0} : cap - live; };
  }
};

// Waits until `q` has `n` waiters (the threads under test got in line).
void AwaitWaiting(const SessionQueue& q, size_t n) {
  for (int i = 0; i < 2000 && q.waiting() != n; ++i) std::this_thread::sleep_for(milliseconds(1));
  ASSERT_EQ(q.waiting(), n);
}

TEST(SessionQueue, GrantsAtOnceWhileThereIsRoom) {
  FakeSessions s;
  SessionQueue q(s.Free(), {4, milliseconds(1000)});
  auto a = q.Acquire();
  auto b = q.Acquire();
  EXPECT_TRUE(a.granted());
  EXPECT_TRUE(b.granted());
  EXPECT_EQ(a.position, 0u);  // did not queue
  EXPECT_EQ(q.reserved(), 2u);
  a.slots.Release();
  EXPECT_EQ(q.reserved(), 1u);
}

TEST(SessionQueue, ReservationsCountAgainstTheCap) {
  FakeSessions s;
  SessionQueue q(s.Free(), {4, milliseconds(30)});
  auto a = q.Acquire(2);
  ASSERT_TRUE(a.granted());
  auto b = q.Acquire();  // two creates in flight hold both slots
  EXPECT_EQ(b.outcome, Outcome::kTimedOut);
}

TEST(SessionQueue, AWaitEndsWithItsPlaceWhenNoSlotFrees) {
  FakeSessions s;
  s.live = 2;
  SessionQueue q(s.Free(), {4, milliseconds(50)});
  auto start = std::chrono::steady_clock::now();
  auto t = q.Acquire();
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(t.outcome, Outcome::kTimedOut);
  EXPECT_EQ(t.position, 1u);
  EXPECT_EQ(t.waiting, 0u);
  EXPECT_GE(t.waited_ms, 50u);
  EXPECT_GE(took, milliseconds(50));
  EXPECT_LT(took, milliseconds(1000));
  EXPECT_EQ(q.waiting(), 0u);  // it left the line
}

TEST(SessionQueue, NoWaitRefusesAtOnce) {
  FakeSessions s;
  s.live = 2;
  SessionQueue q(s.Free(), {4, milliseconds(0)});
  EXPECT_EQ(q.Acquire().outcome, Outcome::kNoWait);
}

TEST(SessionQueue, AFullQueueRefusesAtOnce) {
  FakeSessions s;
  s.live = 2;
  SessionQueue q(s.Free(), {1, milliseconds(2000)});
  std::thread waiter([&] { EXPECT_EQ(q.Acquire().outcome, Outcome::kShuttingDown); });
  AwaitWaiting(q, 1);
  auto start = std::chrono::steady_clock::now();
  auto t = q.Acquire();
  EXPECT_EQ(t.outcome, Outcome::kQueueFull);
  EXPECT_EQ(t.waiting, 1u);
  EXPECT_EQ(t.position, 0u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(500));
  q.Shutdown();
  waiter.join();
}

TEST(SessionQueue, AFreedSlotGoesToTheWaiterWithNotify) {
  FakeSessions s;
  s.live = 2;
  SessionQueue q(s.Free(), {4, milliseconds(5000)});
  SessionQueue::Ticket got;
  std::thread waiter([&] { got = q.Acquire(); });
  AwaitWaiting(q, 1);
  s.live = 1;
  q.Notify();
  waiter.join();
  EXPECT_TRUE(got.granted());
  EXPECT_EQ(got.position, 1u);
  EXPECT_LT(got.waited_ms, 5000u);
}

TEST(SessionQueue, FirstComeFirstServed) {
  FakeSessions s;
  s.cap = 1;
  s.live = 1;
  SessionQueue q(s.Free(), {8, milliseconds(5000)});
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::thread> waiters;
  for (int i = 0; i < 4; ++i) {
    waiters.emplace_back([&, i] {
      auto t = q.Acquire();
      ASSERT_TRUE(t.granted());
      EXPECT_EQ(t.position, static_cast<size_t>(i + 1));
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(i);
      // Holds its slot until the next one is let in by the test: one at a time.
    });
    AwaitWaiting(q, static_cast<size_t>(i + 1));  // arrival order is i
  }
  s.live = 0;  // one slot: each grant is released (dropped at thread end) before the next fits
  q.Notify();
  for (auto& w : waiters) w.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

TEST(SessionQueue, ALaterSmallerRequestDoesNotOvertakeTheHead) {
  FakeSessions s;
  s.cap = 2;
  s.live = 1;  // one free: the head wants two
  SessionQueue q(s.Free(), {4, milliseconds(300)});
  std::thread head([&] { EXPECT_EQ(q.Acquire(2).outcome, Outcome::kTimedOut); });
  AwaitWaiting(q, 1);
  auto second = q.Acquire(1);  // would fit, but waits behind the head until the head gives up
  head.join();
  EXPECT_TRUE(second.granted());
  EXPECT_EQ(second.position, 2u);
  EXPECT_GE(second.waited_ms, 200u);
}

TEST(SessionQueue, ShutdownWakesEveryWaiter) {
  FakeSessions s;
  s.live = 2;
  SessionQueue q(s.Free(), {8, milliseconds(30000)});
  std::atomic<int> woken{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 3; ++i)
    waiters.emplace_back([&] {
      if (q.Acquire().outcome == Outcome::kShuttingDown) ++woken;
    });
  AwaitWaiting(q, 3);
  auto start = std::chrono::steady_clock::now();
  q.Shutdown();
  for (auto& w : waiters) w.join();
  EXPECT_EQ(woken, 3);
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2000));
  EXPECT_EQ(q.Acquire().outcome, Outcome::kShuttingDown);
}

TEST(SessionQueue, ASlotFreedWithoutNotifyIsSeenByTheRecheck) {
  FakeSessions s;
  s.live = 2;
  SessionQueue q(s.Free(), {4, milliseconds(3000)});
  std::thread freer([&] {
    AwaitWaiting(q, 1);
    s.live = 0;  // no Notify
  });
  auto t = q.Acquire();
  freer.join();
  EXPECT_TRUE(t.granted());
}

}  // namespace
}  // namespace lsb::sched
