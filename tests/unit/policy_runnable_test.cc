// server/policy_runnable.h: the backend's verdict per policy, taken once per loaded set.
#include "server/policy_runnable.h"

#include <gtest/gtest.h>

#include "runtime/native/native_backend.h"

#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace lsb::server {
namespace {

// A backend that cannot run runtime runsc, and counts how often it is asked. The fix is its own
// (Backend::RefusalFix): the verdict never guesses wording from the backend's name.
class RuncOnlyBackend : public Backend {
 public:
  std::string name() const override { return "native"; }
  std::string RefusalFix(const Policy& policy) const override { return "the test backend's fix for " + policy.name; }
  // A test double (not a backend a policy runs on): every control "enforced", Check decides.
  Enforcement DescribeControl(const ControlRow&, const Policy&) const override { return Enforced("test double"); }
  Status Check(const Policy& policy) const override {
    ++checks;
    if (policy.runtime == ContainerRuntime::kRunsc) return Error{"the native backend cannot enforce policy '" + policy.name + "'"};
    return OkStatus();
  }
  Result<std::unique_ptr<Box>> Start(const Policy&, const protocol::BoxSetup&, const BoxOwner&) override {
    return Error{"not in this test"};
  }
  Result<protocol::BoxSetup> SetupFor(const Policy&) const override { return protocol::BoxSetup{}; }
  mutable int checks = 0;
};

class PolicyRunnabilityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("lsb-runnable-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    Write("plain", "");
    Write("gv", "container:\n  image: python:3.12-slim\n  runtime: runsc\n  gvisor_accept_weaker: true\n");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& extra) {
    std::ofstream(dir_ / (name + ".yaml")) << "version: \"1.0\"\nname: " << name << "\n" << extra;
  }
  std::filesystem::path dir_;
};

TEST_F(PolicyRunnabilityTest, MarksWhatTheBackendCannotRunWithTheFixOncePerSnapshot) {
  sched::PolicyStore store(dir_.string());
  ASSERT_TRUE(store.Reload().ok());
  RuncOnlyBackend backend;
  PolicyRunnability runnability(backend);
  auto verdicts = runnability.For(store.Snapshot());
  EXPECT_TRUE(verdicts->at("plain").runnable);
  EXPECT_TRUE(verdicts->at("plain").reason.empty());
  const Runnability& gv = verdicts->at("gv");
  EXPECT_FALSE(gv.runnable);
  EXPECT_NE(gv.reason.find("the native backend of this daemon cannot run it"), std::string::npos) << gv.reason;
  EXPECT_NE(gv.reason.find("\n  fix: the test backend's fix for gv"), std::string::npos) << gv.reason;
  EXPECT_EQ(backend.checks, 2);
  // Same snapshot: no new checks, whether asked for all or one.
  runnability.For(store.Snapshot());
  EXPECT_FALSE(runnability.Of(store, *store.Find("gv")).runnable);
  EXPECT_EQ(backend.checks, 2);
  // A reload is a new snapshot: checked again.
  ASSERT_TRUE(store.Reload().ok());
  EXPECT_TRUE(runnability.Of(store, *store.Find("plain")).runnable);
  EXPECT_EQ(backend.checks, 4);
}

// The wording of each real backend's fix is its own.
TEST(BackendRefusalFix, EachBackendSaysHowToGetWhatItRefused) {
  Policy gv;
  gv.runtime = ContainerRuntime::kRunsc;
  Policy net;  // issue 19: the network and its secrets are served now: no fix of its own
  net.network_enabled = true;
  net.network_secrets = {NetworkSecret{"api.example.com", "Authorization", "${T}"}};
  native::NativeBackend native;
  EXPECT_EQ(native.RefusalFix(gv).rfind("run the daemon with --backend docker on an engine where gVisor's runtime runsc", 0), 0u);
  EXPECT_EQ(native.RefusalFix(net).rfind("fix what the backend names above", 0), 0u);
  EXPECT_EQ(native.RefusalFix(Policy{}).rfind("fix what the backend names above", 0), 0u);
}

}  // namespace
}  // namespace lsb::server
