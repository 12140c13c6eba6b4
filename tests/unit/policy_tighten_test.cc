#include "policy/tighten.h"

#include <gtest/gtest.h>

#include "policy/policy_loader.h"

namespace lsb {
namespace {

Policy Seed() { return *LoadPolicyFile(std::string(LSB_SOURCE_DIR) + "/policies/code-sandbox.yaml"); }

TEST(PolicyTighten, LowersLimits) {
  PolicyOverrides o;
  o.timeout_ms = 5000;
  o.memory_bytes = 64ull << 20;
  o.cpu = 0.25;
  o.pids = 16;
  auto p = TightenPolicy(Seed(), o);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->timeout_ms, 5000u);
  EXPECT_EQ(p->memory_bytes, 64ull << 20);
  EXPECT_DOUBLE_EQ(p->cpu, 0.25);
  EXPECT_EQ(p->pids, 16u);
  EXPECT_EQ(p->positions.count("resources.timeout"), 0u);
  EXPECT_EQ(p->output_bytes, Seed().output_bytes);  // untouched
}

TEST(PolicyTighten, RefusesToRaiseOrZero) {
  PolicyOverrides raise;
  raise.memory_bytes = 1ull << 30;
  auto p = TightenPolicy(Seed(), raise);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("resources.memory: a request may lower the policy's 256Mi, not raise it to 1Gi"),
            std::string::npos)
      << p.error().message;

  PolicyOverrides zero;
  zero.timeout_ms = 0;
  EXPECT_FALSE(TightenPolicy(Seed(), zero).ok());

  PolicyOverrides net;
  net.network_enabled = true;
  auto n = TightenPolicy(Seed(), net);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.error().message.find("cannot turn it on"), std::string::npos);
}

}  // namespace
}  // namespace lsb
