#include "policy/tighten.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <vector>

#include "policy/controls.h"
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
  // A raise is a loosening (the daemon's 403), told apart from a bad value by its kind.
  EXPECT_TRUE(p.error().IsPermissionDenied()) << ErrorCodeName(p.error().code);
  EXPECT_EQ(p.error().field, "resources.memory");
  EXPECT_NE(p.error().message.find("resources.memory: a request may lower the policy's 256Mi, not raise it to 1Gi"),
            std::string::npos)
      << p.error().message;

  PolicyOverrides zero;
  zero.timeout_ms = 0;
  auto z = TightenPolicy(Seed(), zero);
  ASSERT_FALSE(z.ok());
  EXPECT_TRUE(z.error().IsInvalidArgument()) << ErrorCodeName(z.error().code);
  EXPECT_EQ(z.error().field, "resources.timeout");

  PolicyOverrides net;
  net.network_enabled = true;
  auto n = TightenPolicy(Seed(), net);
  ASSERT_FALSE(n.ok());
  EXPECT_TRUE(n.error().IsPermissionDenied()) << ErrorCodeName(n.error().code);
  EXPECT_EQ(n.error().field, "network.enabled");
  EXPECT_NE(n.error().message.find("cannot turn it on"), std::string::npos);
}

// Values no box can run with are the request's mistake, named by the policy key (the daemon answers
// 400 naming its field), never a box that fails to start (a 502).
TEST(PolicyTighten, FloorsABoxNeeds) {
  struct Case {
    PolicyOverrides o;
    std::string key;
  };
  std::vector<Case> cases(8);
  cases[0].o.memory_bytes = 1, cases[0].key = "resources.memory";
  cases[1].o.memory_bytes = kMinMemoryBytes - 1, cases[1].key = "resources.memory";
  cases[2].o.cpu = 0.001, cases[2].key = "resources.cpu";
  cases[3].o.cpu = -1, cases[3].key = "resources.cpu";
  cases[4].o.cpu = std::nan(""), cases[4].key = "resources.cpu";
  cases[5].o.timeout_ms = 0, cases[5].key = "resources.timeout";
  cases[6].o.pids = 1, cases[6].key = "resources.pids";
  cases[7].o.open_files = 2, cases[7].key = "resources.open_files";
  for (const auto& c : cases) {
    auto st = CheckRequestedLimits(c.o);
    ASSERT_FALSE(st.ok()) << c.key;
    EXPECT_TRUE(st.error().IsInvalidArgument()) << ErrorCodeName(st.error().code);
    EXPECT_EQ(st.error().field, c.key) << st.error().message;
    EXPECT_EQ(st.error().message.rfind(c.key + ":", 0), 0u) << st.error().message;  // what a user reads
    auto t = TightenPolicy(Seed(), c.o);
    ASSERT_FALSE(t.ok()) << c.key;
    EXPECT_TRUE(t.error().IsInvalidArgument()) << c.key;
  }
  PolicyOverrides at_floor;
  at_floor.memory_bytes = kMinMemoryBytes;
  at_floor.cpu = kMinCpu;
  EXPECT_TRUE(CheckRequestedLimits(at_floor).ok());
  EXPECT_TRUE(TightenPolicy(Seed(), at_floor).ok());
}

}  // namespace
}  // namespace lsb

namespace lsb {
namespace {

// A request may lower the grace (to 0: SIGKILL at once), not raise it; a lowered timeout lowers
// the grace with it (issue 16).
TEST(PolicyTighten, TimeoutGraceIsLoweredNeverRaisedAndNeverLongerThanTheTimeout) {
  PolicyOverrides lower;
  lower.timeout_grace_ms = 0;
  auto p = TightenPolicy(Seed(), lower);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->timeout_grace_ms, 0u);
  PolicyOverrides raise;
  raise.timeout_grace_ms = Seed().timeout_grace_ms + 1;
  auto r = TightenPolicy(Seed(), raise);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().IsPermissionDenied()) << ErrorCodeName(r.error().code);
  EXPECT_EQ(r.error().field, "resources.timeout_grace");
  EXPECT_NE(r.error().message.find("resources.timeout_grace: a request may lower"), std::string::npos)
      << r.error().message;
  PolicyOverrides short_timeout;
  short_timeout.timeout_ms = 500;
  auto s = TightenPolicy(Seed(), short_timeout);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->timeout_grace_ms, 500u);
}

}  // namespace
}  // namespace lsb

namespace lsb {
namespace {

// A request's value for each control a request may narrow; nullopt for the others. A control the
// table marks kLower without a case here fails the test below.
std::optional<PolicyOverrides> NarrowingOf(Control c) {
  PolicyOverrides o;
  switch (c) {
    case Control::kCpu: o.cpu = 0.1; break;
    case Control::kMemory: o.memory_bytes = 32ull << 20; break;
    case Control::kTimeout: o.timeout_ms = 1000; break;
    case Control::kTimeoutGrace: o.timeout_grace_ms = 100; break;
    case Control::kPids: o.pids = 8; break;
    case Control::kOutput: o.output_bytes = 1024; break;
    case Control::kOpenFiles: o.open_files = 16; break;
    case Control::kFileSize: o.file_size_bytes = 4096; break;
    case Control::kNetworkEnabled: o.network_enabled = false; break;
    case Control::kNetworkAllow: o.network_allow = std::vector<std::string>{"pypi.org"}; break;
    default:  // the table's kNo controls: a request has no field for them
      return std::nullopt;
  }
  return o;
}

// The table's Narrowing is what TightenPolicy does: each control marked kLower is narrowed (its
// value changes and its position is cleared), and only those have a request field.
TEST(PolicyTighten, NarrowsExactlyWhatTheTableSays) {
  Policy wide = Seed();
  wide.network_enabled = true;
  wide.network_allow = {"pypi.org", "*.github.com"};
  for (const ControlInfo& c : AllControls()) {
    std::optional<PolicyOverrides> o = NarrowingOf(c.id);
    EXPECT_EQ(o.has_value(), c.narrowing == Narrowing::kLower) << c.key;
    if (!o) continue;
    wide.positions[std::string(c.key)] = SourcePos{"t.yaml", 1, 1};
    auto p = TightenPolicy(wide, *o);
    ASSERT_TRUE(p.ok()) << c.key << ": " << p.error().message;
    EXPECT_EQ(p->positions.count(std::string(c.key)), 0u) << c.key;
  }
}

}  // namespace
}  // namespace lsb
