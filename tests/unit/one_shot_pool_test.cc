// Pool fitness (scheduler/one_shot_pool.h, Backend::BoxShape): a pooled box serves a request only
// when the request's policy has the box's shape, derived from what the backend builds the box
// from, and the run takes its limits from the request's policy. The pool tests run the real
// native backend, the real llm-sandbox-init and the real pool threads; root only.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "runtime/native/init_binary.h"
#include "runtime/native/native_backend.h"
#include "scheduler/one_shot_pool.h"
#include "scheduler/policy_store.h"

namespace lsb::sched {
namespace {

Policy BasePolicy() {
  Policy p;
  p.name = "shape";
  p.image = "host";
  p.tmpfs.push_back(TmpfsMount{"/tmp", 16 << 20, 01777, true, true, true, "size=16M"});
  p.allow = {"/usr/bin/python3"};
  p.memory_bytes = 128 << 20;
  p.pids = 32;
  return p;
}

std::string Shape(const Backend& b, const Policy& p) {
  auto s = b.ShapeFor(p);
  EXPECT_TRUE(s.ok()) << s.error().message;
  return s.ok() ? *s : "";
}

TEST(NativeBoxShape, WhatTheBoxIsBuiltWithChangesItWhatTheRunTakesDoesNot) {
  native::NativeBackend backend;
  const std::string base = Shape(backend, BasePolicy());
  // Per run (init's RunSpec, the host's verdict): a pooled box may serve them.
  std::vector<std::pair<const char*, void (*)(Policy&)>> per_run = {
      {"timeout", [](Policy& p) { p.timeout_ms = 1000; }},
      {"timeout_grace", [](Policy& p) { p.timeout_grace_ms = 0; }},
      {"output", [](Policy& p) { p.output_bytes = 8; }},
      {"open_files", [](Policy& p) { p.open_files = 64; }},
      {"file_size", [](Policy& p) { p.file_size_bytes = 1 << 20; }},
      {"env", [](Policy& p) { p.env["A"] = "b"; }},
      {"workdir", [](Policy& p) { p.workdir = "/"; }},
      {"languages", [](Policy& p) { p.default_language = "bash"; }},
      {"alerts", [](Policy& p) { p.alert_severity[protocol::AlertRule::kTimeout] = std::nullopt; }},
      {"description", [](Policy& p) { p.description = "other words"; }},
  };
  for (const auto& [what, change] : per_run) {
    Policy p = BasePolicy();
    change(p);
    EXPECT_EQ(Shape(backend, p), base) << what;
  }
  // The box itself (init's setup, the cgroups, the namespaces): a box built otherwise must not.
  std::vector<std::pair<const char*, void (*)(Policy&)>> per_box = {
      {"memory", [](Policy& p) { p.memory_bytes = 64 << 20; }},
      {"cpu", [](Policy& p) { p.cpu = 0.5; }},
      {"pids", [](Policy& p) { p.pids = 16; }},
      {"tmpfs size", [](Policy& p) { p.tmpfs[0].size_bytes = 8 << 20; }},
      {"tmpfs noexec", [](Policy& p) { p.tmpfs[0].noexec = false; }},
      {"read_only", [](Policy& p) { p.read_only = false; }},
      {"allow", [](Policy& p) { p.allow.push_back("/bin/sh"); }},
      {"deny", [](Policy& p) { p.deny.push_back("/bin/sh"); }},
      {"user", [](Policy& p) { p.uid = 1001; }},
      {"trace", [](Policy& p) { p.trace = true; }},
      {"network", [](Policy& p) { p.network_enabled = true; }},
      {"network.allow", [](Policy& p) {
         p.network_enabled = true;
         p.network_allow = {"pypi.org"};
       }},
  };
  for (const auto& [what, change] : per_box) {
    Policy p = BasePolicy();
    change(p);
    auto s = backend.ShapeFor(p);
    ASSERT_TRUE(s.ok()) << what << ": " << s.error().message;
    EXPECT_NE(*s, base) << what;
  }
}

// Stands for a field added to Policy that the backend then builds boxes with: the box's hostname
// is taken from `description`, the one field the old hand-written comparison of pooled boxes
// left out. Nothing in the pool names it; the shape still tells the boxes apart.
class HostnameFromDescription : public native::NativeBackend {
 public:
  Result<protocol::BoxSetup> SetupFor(const Policy& policy) const override {
    LSB_ASSIGN_OR_RETURN(protocol::BoxSetup s, NativeBackend::SetupFor(policy));
    s.hostname = policy.description;
    return s;
  }
};

class OneShotPoolFitness : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root";
    if (!native::OpenInitBinary().ok()) GTEST_SKIP() << "llm-sandbox-init not built";
    char tmpl[] = "/tmp/lsb-pool-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ + "/pool.yaml") << "version: \"1.0\"\n"
                                          "name: pooled\n"
                                          "description: built-without\n"
                                          "container:\n"
                                          "  image: host\n"
                                          "  tmpfs:\n"
                                          "    /tmp: \"size=16M\"\n"
                                          "commands:\n"
                                          "  allow: [\"/usr/bin/python3\"]\n"
                                          "resources:\n"
                                          "  memory: 128M\n"
                                          "  pids: 32\n"
                                          "  timeout: 20\n";
    store_ = std::make_unique<PolicyStore>(dir_);
    auto n = store_->Reload();
    ASSERT_TRUE(n.ok()) << n.error().message;
    pool_ = std::make_unique<OneShotPool>(backend_, *store_, 1);
    pool_->Start({"pooled"});
    ASSERT_TRUE(pool_->WaitFull(std::chrono::seconds(30)));
    ASSERT_EQ(pool_->stats().ready, 1u);
  }
  void TearDown() override {
    if (pool_) pool_->Shutdown();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  Policy Pooled() const { return *store_->Find("pooled"); }
  ExecResult Run(const Policy& req, const std::string& code) {
    auto box = pool_->Acquire(backend_, req);
    EXPECT_TRUE(box.ok()) << box.error().message;
    if (!box.ok()) return {};
    ExecRequest r;
    r.code = code;
    auto res = (*box)->Run(r);
    EXPECT_TRUE(res.ok()) << res.error().message;
    return res.ok() ? *res : ExecResult{};
  }

  HostnameFromDescription backend_;
  std::string dir_;
  std::unique_ptr<PolicyStore> store_;
  std::unique_ptr<OneShotPool> pool_;
};

TEST_F(OneShotPoolFitness, APooledBoxBuiltWithoutANewFieldDoesNotServeARequestThatNeedsIt) {
  Policy req = Pooled();
  req.description = "needs-it";  // the copy of the policy with the new field set
  auto res = Run(req, "import socket; print(socket.gethostname())");
  EXPECT_EQ(res.stdout_data, "needs-it\n");  // built for the request, not taken from the pool
  auto st = pool_->stats();
  EXPECT_EQ(st.hits, 0u);
  EXPECT_EQ(st.misses, 1u);
  // The pooled box is still there for the policy it was built for.
  ASSERT_TRUE(pool_->WaitFull(std::chrono::seconds(30)));
  EXPECT_EQ(Run(Pooled(), "import socket; print(socket.gethostname())").stdout_data, "built-without\n");
  EXPECT_EQ(pool_->stats().hits, 1u);
}

TEST_F(OneShotPoolFitness, ARequestThatTightensOnlyRunLimitsIsServedFromThePoolUnderItsOwnLimits) {
  Policy req = Pooled();
  req.output_bytes = 8;
  auto res = Run(req, "print('x' * 100)");
  EXPECT_EQ(res.status, ExecStatus::kOutputLimit);
  EXPECT_TRUE(res.truncated);
  EXPECT_EQ(res.stdout_data, std::string(8, 'x'));
  ASSERT_TRUE(pool_->WaitFull(std::chrono::seconds(30)));
  req = Pooled();
  req.timeout_ms = 1000;
  auto t0 = std::chrono::steady_clock::now();
  res = Run(req, "import time; time.sleep(20)");
  EXPECT_EQ(res.status, ExecStatus::kTimeout);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(8));
  auto st = pool_->stats();
  EXPECT_EQ(st.hits, 2u);
  EXPECT_EQ(st.misses, 0u);
}

TEST_F(OneShotPoolFitness, ARequestForAnotherBoxGetsAFreshOne) {
  Policy req = Pooled();
  req.memory_bytes = 64 << 20;  // a tightening the box's cgroup was not made with
  auto res = Run(req, "x = bytearray(100 << 20); print(len(x))");
  EXPECT_EQ(res.status, ExecStatus::kOom);
  EXPECT_EQ(pool_->stats().hits, 0u);
  EXPECT_EQ(pool_->stats().misses, 1u);
}

// A backend whose boxes belong to the owner they were made for (as the native fork server's do:
// each owner's from its own zygote), recording whom each box was made for.
class OwnedBoxes : public native::NativeBackend {
 public:
  bool BoxesBelongToOwner() const override { return true; }
  Result<std::unique_ptr<Box>> Start(const Policy& policy, const protocol::BoxSetup& setup,
                                     const BoxOwner& owner) override {
    LSB_ASSIGN_OR_RETURN(std::unique_ptr<Box> box, NativeBackend::Start(policy, setup, std::nullopt));
    std::lock_guard<std::mutex> l(mu_);
    made_for_[box->id()] = owner.value_or("(nobody)");
    return box;
  }
  std::string MadeFor(const std::string& id) {
    std::lock_guard<std::mutex> l(mu_);
    return made_for_.count(id) ? made_for_[id] : "(unknown)";
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::string> made_for_;
};

// DESIGN §12: a pool never hands a box made for one owner to another when boxes belong to owners;
// each owner's pool fills for that owner, and owners past kMaxPoolOwners push out the oldest.
TEST(OneShotPoolOwners, ABoxMadeForOneOwnerIsNeverHandedToAnother) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  if (!native::OpenInitBinary().ok()) GTEST_SKIP() << "llm-sandbox-init not built";
  char tmpl[] = "/tmp/lsb-pool-owner-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  std::ofstream(dir + "/pool.yaml") << "version: \"1.0\"\nname: pooled\ncontainer:\n  image: host\n"
                                       "commands:\n  allow: [\"/usr/bin/python3\"]\n";
  PolicyStore store(dir);
  ASSERT_TRUE(store.Reload().ok());
  OwnedBoxes backend;
  OneShotPool pool(backend, store, 1);
  pool.Start({"pooled"});  // pooled for the daemon's one user ("")
  ASSERT_TRUE(pool.WaitFull(std::chrono::seconds(30)));
  const Policy policy = *store.Find("pooled");
  auto take = [&](const std::string& owner) {
    auto box = pool.Acquire(backend, policy, owner);
    EXPECT_TRUE(box.ok()) << box.error().message;
    return box.ok() ? backend.MadeFor((*box)->box().id()) : std::string("(failed)");
  };
  EXPECT_EQ(take("tok-a"), "tok-a");  // a miss: made now for A, not the pooled "" box
  ASSERT_TRUE(pool.WaitFull(std::chrono::seconds(30)));  // A's pool filled, for A
  EXPECT_EQ(take("tok-b"), "tok-b");  // not A's pooled box
  ASSERT_TRUE(pool.WaitFull(std::chrono::seconds(30)));
  EXPECT_EQ(take("tok-a"), "tok-a");
  EXPECT_EQ(take("tok-b"), "tok-b");
  EXPECT_EQ(take(""), "");
  EXPECT_GE(pool.stats().hits, 3u);
  // Past kMaxPoolOwners owners, the owner served least recently ("tok-a" here) is no longer pooled.
  for (size_t i = 0; i < kMaxPoolOwners; ++i) EXPECT_EQ(take("tok-" + std::to_string(i)), "tok-" + std::to_string(i));
  ASSERT_TRUE(pool.WaitFull(std::chrono::seconds(60)));
  EXPECT_LE(pool.stats().ready, kMaxPoolOwners);
  pool.Shutdown();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lsb::sched
