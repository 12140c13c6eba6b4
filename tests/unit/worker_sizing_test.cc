// The daemon's default concurrency is sized by what a box costs (memory, pids), not by cores
// (server/worker_sizing.h): two cores and plenty of memory must give room for ten sleeping agents.
#include <gtest/gtest.h>

#include "server/worker_sizing.h"

namespace lsb::server {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

Policy WithLimits(const std::string& name, uint64_t memory, uint32_t pids) {
  Policy p;
  p.name = name;
  p.memory_bytes = memory;
  p.pids = pids;
  return p;
}

TEST(WorkerSizing, MemoryDividedByTheLargestBoxNotCores) {
  // 20 GiB available, 512 MiB boxes: 3/4 * 40 = 30 workers, whatever the core count.
  auto s = SizeWorkers({20480 * kMiB, 32768}, {"node", 512 * kMiB, 64});
  EXPECT_EQ(s.workers, 30u);
  EXPECT_NE(s.why.find("memory"), std::string::npos) << s.why;
  EXPECT_NE(s.why.find("node"), std::string::npos) << s.why;
}

TEST(WorkerSizing, PidsBoundWhenTighterThanMemory) {
  auto s = SizeWorkers({64ull << 30, 1000}, {"p", 128 * kMiB, 128});  // 750 / 128 = 5
  EXPECT_EQ(s.workers, 5u);
  EXPECT_NE(s.why.find("pids"), std::string::npos) << s.why;
}

TEST(WorkerSizing, FloorAndCeiling) {
  EXPECT_EQ(SizeWorkers({512 * kMiB, 32768}, {"big", 1024 * kMiB, 64}).workers, kMinWorkers);
  EXPECT_EQ(SizeWorkers({1ull << 40, 1u << 22}, {"tiny", 16 * kMiB, 16}).workers, kMaxWorkers);
  EXPECT_EQ(SizeWorkers({}, {}).workers, kMinWorkers);  // nothing known: the floor
}

TEST(WorkerSizing, LargestPolicySetsTheCostAndUnlimitedMemoryHasANominalOne) {
  auto c = LargestBoxCost({WithLimits("a", 256 * kMiB, 64), WithLimits("b", 512 * kMiB, 16),
                           WithLimits("c", 128 * kMiB, 128)});
  EXPECT_EQ(c.policy, "b");
  EXPECT_EQ(c.memory_bytes, 512 * kMiB);
  EXPECT_EQ(c.pids, 128u);
  EXPECT_EQ(LargestBoxCost({WithLimits("free", 0, 64)}).memory_bytes, kUnlimitedBoxMemory);
}

TEST(WorkerSizing, ThisHostIsReadable) {
  auto h = ReadHostCapacity();
  EXPECT_GT(h.memory_available_bytes, 0u);
  EXPECT_GT(h.pid_budget, 0u);
}

}  // namespace
}  // namespace lsb::server
