// The executor frees a task's slot before its result reaches the caller: a caller that never has
// more tasks in flight than workers + queue is never refused (the daemon answered such clients with
// a spurious 429 when the result was published before the worker's slot was released).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "scheduler/executor.h"

namespace lsb {
namespace {

TEST(ExecutorAdmission, TheSlotIsFreeWhenTheResultArrives) {
  sched::Executor ex(1, 1);  // room for two: one running, one queued
  for (int i = 0; i < 2000; ++i) {
    sched::Admission a;
    ASSERT_EQ(sched::RunOn<int>(ex, [] { return 7; }, &a), 7) << "iteration " << i;
    // Nothing of ours runs any more: both places must be free.
    std::promise<void> first, second;
    ASSERT_EQ(ex.Submit([&](bool) { first.set_value(); }), sched::Admission::kAccepted) << "iteration " << i;
    ASSERT_EQ(ex.Submit([&](bool) { second.set_value(); }), sched::Admission::kAccepted) << "iteration " << i;
    first.get_future().wait();
    second.get_future().wait();
  }
}

TEST(ExecutorAdmission, ClientsAtCapacityAreNeverRefused) {
  sched::Executor ex(1, 1);
  std::atomic<int> refused{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 2; ++c)  // two callers, each one RunOn at a time: never more than capacity
    clients.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        sched::Admission a;
        if (!sched::RunOn<int>(ex, [] { return 1; }, &a)) ++refused;
      }
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(refused.load(), 0);
}

TEST(ExecutorAdmission, ThenRunsAfterACancelledTaskToo) {
  sched::Executor ex(1, 1);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  ASSERT_EQ(ex.Submit([gate](bool) { gate.wait(); }), sched::Admission::kAccepted);
  while (ex.running() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::atomic<bool> cancelled{false}, then_ran{false};
  ASSERT_EQ(ex.Submit([&](bool c) { cancelled = c; }, [&] { then_ran = true; }), sched::Admission::kAccepted);
  std::thread stopper([&] { ex.Shutdown(); });
  while (!then_ran) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // dropped before the gate opens
  release.set_value();
  stopper.join();
  EXPECT_TRUE(cancelled);
  EXPECT_TRUE(then_ran);
}

// A burst of session creates waits for room for a bounded time (issue 35) instead of a 429 at once.
TEST(ExecutorAdmission, SubmitWaitUntilWaitsForRoomThenGivesUp) {
  sched::Executor ex(1, 0);  // room for one: the one running
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  ASSERT_EQ(ex.Submit([gate](bool) { gate.wait(); }), sched::Admission::kAccepted);
  while (ex.running() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto soon = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  EXPECT_EQ(ex.SubmitWaitUntil([](bool) {}, {}, soon), sched::Admission::kQueueFull);
  EXPECT_GE(std::chrono::steady_clock::now(), soon);
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    release.set_value();
  });
  std::promise<void> ran;
  auto later = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  EXPECT_EQ(ex.SubmitWaitUntil([&](bool) { ran.set_value(); }, {}, later), sched::Admission::kAccepted);
  ran.get_future().wait();
  opener.join();
}

}  // namespace
}  // namespace lsb
