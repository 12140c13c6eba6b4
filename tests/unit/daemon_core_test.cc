// The Backend interface is complete for the daemon: a backend of our own that implements only the
// pure functions (no leftovers, no pool, no fix wording of its own) is accepted by the daemon's
// construction as it is and reported like any other; one that keeps a pool of its own (as the Docker
// backend does) has its figures reported and no second pool beside it. Real parts: the policy store
// on the repository's policies, the executor, the routes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "server/daemon.h"

namespace lsb::server {
namespace {

// Only what Backend requires. Start is never reached: nothing here executes.
class DefaultsOnlyBackend : public Backend {
 public:
  std::string name() const override { return "defaults-only"; }
  // A test double (not a backend a policy runs on): every control "enforced", Check decides.
  Enforcement DescribeControl(const ControlRow&, const Policy&) const override { return Enforced("test double"); }
  Status Check(const Policy& /*policy*/) const override { return Error{"this test backend runs nothing"}; }
  Result<std::unique_ptr<Box>> Start(const Policy& /*policy*/, const protocol::BoxSetup& /*setup*/, const BoxOwner& /*owner*/) override {
    return Error{"this test backend starts no box"};
  }
  Result<protocol::BoxSetup> SetupFor(const Policy& policy) const override { return PolicyBoxSetup(policy); }
};

// A backend keeping warm boxes itself: the daemon must report its figures and pool nothing itself.
class SelfPoolingBackend : public DefaultsOnlyBackend {
 public:
  std::string name() const override { return "self-pooling"; }
  std::optional<PoolStats> OwnPoolStats() const override {
    PoolStats s;
    s.per_policy = 3;
    s.ready = 2;
    s.hits = 5;
    s.misses = 1;
    s.ready_by_policy["code-sandbox"] = 2;
    return s;
  }
};

// A backend that built every policy's container.build (as its own record says): the daemon shows
// what the backend recorded, asking the backend, not any backend's files.
class BuiltEverythingBackend : public DefaultsOnlyBackend {
 public:
  std::string name() const override { return "built-everything"; }
  std::optional<BuildRecord> BuildRecordOf(const Policy& policy) const override {
    BuildRecord r;
    r.reference = "build.llm-sandbox.local/env:" + policy.name;
    r.policy = policy.name;
    r.python = "3.12.1";
    r.packages = {{"tinypkg", "1.0"}};
    r.apt = {{"jq", "1.6-2"}};
    return r;
  }
};

// A policy directory holding one policy with a container.build, "built".
std::string BuildPolicyDir() {
  char dir[] = "/tmp/lsb-daemon-core-XXXXXX";
  if (!::mkdtemp(dir)) return "";
  std::ofstream(std::string(dir) + "/built.yaml")
      << "version: \"1.0\"\nname: built\ncontainer:\n  image: python:3.12-slim\n  build:\n"
         "    pip: [\"tinypkg==1.0\"]\n";
  return dir;
}

class NullStream : public ResponseStream {
 public:
  bool Begin(int /*status*/, const std::string& /*content_type*/) override { return true; }
  bool Write(std::string_view /*chunk*/) override { return true; }
};

class DaemonCoreTest : public ::testing::Test {
 protected:
  void Build(std::unique_ptr<Backend> backend, size_t pool_size,
             const std::string& policies_dir = std::string(LSB_SOURCE_DIR) + "/policies") {
    DaemonConfig config;
    config.pool_size = pool_size;
    config.max_concurrency = 1;
    config.monitor.audit_path.clear();  // no audit log
    auto policies = std::make_unique<sched::PolicyStore>(policies_dir);
    auto loaded = policies->Reload();
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    auto core = DaemonCore::Create(config, std::move(backend), std::move(policies));
    ASSERT_TRUE(core.ok()) << core.error().message;
    core_ = std::move(*core);
  }
  void TearDown() override {
    if (!core_) return;
    core_->BeginShutdown();
    core_->FinishWork(0);
    core_->StopMonitor();
  }
  nlohmann::json Get(const std::string& path) {
    HttpRequest req;
    req.method = "GET";
    req.path = req.target = path;
    NullStream out;
    Reply r = core_->router().Dispatch(req, out);
    EXPECT_EQ(r.response.status, 200) << path << ": " << r.response.body;
    return nlohmann::json::parse(r.response.body);
  }
  std::unique_ptr<DaemonCore> core_;
};

TEST_F(DaemonCoreTest, ABackendWithOnlyTheDefaultsIsServedAndReportsAnEmptyPool) {
  Build(std::make_unique<DefaultsOnlyBackend>(), 2);
  auto ready = Get("/readyz");
  EXPECT_EQ(ready["backend"], "defaults-only");
  EXPECT_EQ(ready["warm_boxes"], 0);
  EXPECT_EQ(ready["pool_hits"], 0);
  // It keeps no pool, so the daemon's one-shot pool keeps one for it (empty: it has no box shape).
  EXPECT_NE(core_->context().boxes.pool(), nullptr);
  auto pool = Get("/v1/overview")["pool"];
  ASSERT_TRUE(pool.is_object()) << pool;
  EXPECT_EQ(pool["per_policy"], 2);
  EXPECT_EQ(pool["warm_boxes"], 0);
  // What it cannot run is said with the interface's own fix.
  auto policy = Get("/v1/policies/code-sandbox");
  EXPECT_EQ(policy["runnable"], false);
  EXPECT_NE(policy["reason"].get<std::string>().find("the defaults-only backend of this daemon cannot run it: "
                                                      "this test backend runs nothing\n  fix: fix what the backend"),
            std::string::npos)
      << policy["reason"];
}

TEST_F(DaemonCoreTest, ABackendThatPoolsItselfHasItsPoolReportedAndNoSecondOne) {
  Build(std::make_unique<SelfPoolingBackend>(), 2);
  EXPECT_EQ(core_->context().boxes.pool(), nullptr);
  auto ready = Get("/readyz");
  EXPECT_EQ(ready["warm_boxes"], 2);
  EXPECT_EQ(ready["pool_hits"], 5);
  EXPECT_EQ(ready["pool_misses"], 1);
  auto pool = Get("/v1/overview")["pool"];
  ASSERT_TRUE(pool.is_object()) << pool;
  EXPECT_EQ(pool["per_policy"], 3);
  EXPECT_EQ(pool["by_policy"]["code-sandbox"], 2);
}

TEST_F(DaemonCoreTest, PoolSizeZeroKeepsNoPool) {
  Build(std::make_unique<DefaultsOnlyBackend>(), 0);
  EXPECT_EQ(core_->context().boxes.pool(), nullptr);
  EXPECT_TRUE(Get("/v1/overview")["pool"].is_null());
  EXPECT_EQ(Get("/readyz")["warm_boxes"], 0);
}

// The HTTP metrics' route label is the pattern the daemon's routers matched: v1 routes with an id,
// the E2B control plane (on the daemon's router) and data plane (its own routers, by port) alike;
// whatever matches nothing is "other", so no raw id or path becomes a label.
TEST_F(DaemonCoreTest, TheMetricsRouteLabelIsTheMatchedPattern) {
  Build(std::make_unique<DefaultsOnlyBackend>(), 0);
  auto label = [this](const std::string& method, const std::string& path,
                      std::map<std::string, std::string> headers = {}) {
    HttpRequest req;
    req.method = method;
    req.path = req.target = path;
    req.headers = std::move(headers);
    return RouteLabel(core_->router(), core_->e2b(), req);
  };
  EXPECT_EQ(label("POST", "/v1/sessions/ses-1a2b/execute"), "/v1/sessions/{id}/execute");
  EXPECT_EQ(label("GET", "/v1/policies/code-sandbox"), "/v1/policies/{name}");
  EXPECT_EQ(label("GET", "/v1/sessions"), "/v1/sessions");
  EXPECT_EQ(label("DELETE", "/v1/executions/ex-1"), "/v1/executions/{id}");  // 405: the path's pattern
  EXPECT_EQ(label("GET", "/sandboxes/sbx-42"), "/sandboxes/{id}");
  EXPECT_EQ(label("POST", "/v2/sandboxes/sbx-42/connect"), "/v2/sandboxes/{id}/connect");
  std::map<std::string, std::string> envd = {{"e2b-sandbox-id", "sbx-42"},
                                             {"e2b-sandbox-port", std::to_string(e2b::kEnvdPort)}};
  EXPECT_EQ(label("POST", "/process.Process/Start", envd), "/process.Process/Start");
  EXPECT_EQ(label("GET", "/files", envd), "/files");
  std::map<std::string, std::string> interp = {{"e2b-sandbox-id", "sbx-42"},
                                               {"e2b-sandbox-port", std::to_string(e2b::kInterpreterPort)}};
  EXPECT_EQ(label("DELETE", "/contexts/ctx-9", interp), "/contexts/{id}");
  EXPECT_EQ(label("GET", "/v1/sessions/ses-1a2b/nope"), "other");
  EXPECT_EQ(label("GET", "/etc/passwd"), "other");
  EXPECT_EQ(label("POST", "/process.Process/Start", {{"e2b-sandbox-id", "sbx-42"}, {"e2b-sandbox-port", "8080"}}),
            "other");
  EXPECT_EQ(label("GET", "/v1/execute", envd), "other");  // the data plane has its own routes only
}

TEST_F(DaemonCoreTest, ABuiltEnvironmentIsTheBackendsRecord) {
  const std::string policies = BuildPolicyDir();
  Build(std::make_unique<BuiltEverythingBackend>(), 0, policies);
  auto env = Get("/v1/policies/built")["environment"];
  EXPECT_EQ(env["built"], true) << env;
  EXPECT_EQ(env["image"], "build.llm-sandbox.local/env:built");
  EXPECT_EQ(env["python"], "3.12.1");
  EXPECT_EQ(env["packages"], nlohmann::json::parse(R"([{"name": "tinypkg", "version": "1.0"}])"));
  EXPECT_EQ(env["apt_packages"], nlohmann::json::parse(R"([{"name": "jq", "version": "1.6-2"}])"));
  auto listed = Get("/v1/policies")["policies"];
  ASSERT_EQ(listed.size(), 1u) << listed;
  EXPECT_EQ(listed[0]["packages"], nlohmann::json::parse(R"(["tinypkg 1.0"])"));
  EXPECT_EQ(listed[0]["apt_packages"], nlohmann::json::parse(R"(["jq 1.6-2"])"));
  std::filesystem::remove_all(policies);
}

TEST_F(DaemonCoreTest, ABackendWithoutARecordShowsTheEnvironmentUnbuilt) {
  const std::string policies = BuildPolicyDir();
  Build(std::make_unique<DefaultsOnlyBackend>(), 0, policies);
  auto env = Get("/v1/policies/built")["environment"];
  EXPECT_EQ(env["built"], false) << env;
  EXPECT_FALSE(env.contains("image")) << env;
  EXPECT_EQ(Get("/v1/policies")["policies"][0]["packages"], nlohmann::json::array());
  std::filesystem::remove_all(policies);
}

}  // namespace
}  // namespace lsb::server
