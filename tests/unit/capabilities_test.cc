#include "base/capabilities.h"

#include <linux/capability.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "base/io.h"

namespace lsb {
namespace {

// capget must agree with the kernel's own account in /proc/self/status, bit for bit.
TEST(Capabilities, AgreeWithProcStatus) {
  auto status = ReadFile("/proc/self/status");
  ASSERT_TRUE(status.ok());
  auto at = status->find("CapEff:");
  ASSERT_NE(at, std::string::npos);
  const uint64_t eff = std::stoull(status->substr(at + 7), nullptr, 16);
  for (int cap = 0; cap <= CAP_LAST_CAP; ++cap)
    EXPECT_EQ(HasEffectiveCapability(cap), ((eff >> cap) & 1) != 0) << "capability " << cap;
}

TEST(Capabilities, OutOfRangeIsFalse) {
  EXPECT_FALSE(HasEffectiveCapability(-1));
  EXPECT_FALSE(HasEffectiveCapability(64));
}

}  // namespace
}  // namespace lsb
