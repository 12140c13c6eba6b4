// The daemon's pure parts: sandbox path checks, request parsing (errors name the field), routing,
// the error -> HTTP mapping, and the executor's admission (bounded queue).
#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "policy/tighten.h"
#include "scheduler/executor.h"
#include "scheduler/sandbox_path.h"
#include "server/api_error.h"
#include "server/daemon.h"
#include "server/json_codec.h"
#include "server/router.h"

namespace lsb {
namespace {

using nlohmann::json;

Policy TmpPolicy() {
  Policy p;
  p.name = "t";
  TmpfsMount t;
  t.path = "/tmp";
  p.tmpfs.push_back(t);
  TmpfsMount h;
  h.path = "/home/sandbox";
  p.tmpfs.push_back(h);
  return p;
}

TEST(SandboxPath, AcceptsNormalizedPathsInsideATmpfs) {
  Policy p = TmpPolicy();
  EXPECT_TRUE(sched::CheckSandboxPath(p, "/tmp/a.txt").ok());
  EXPECT_TRUE(sched::CheckSandboxPath(p, "/tmp/d/e/f.bin").ok());
  EXPECT_TRUE(sched::CheckSandboxPath(p, "/home/sandbox/x").ok());
}

TEST(SandboxPath, RefusesTraversalAndEverythingOutside) {
  Policy p = TmpPolicy();
  for (const char* bad : {"", "tmp/a", "/tmp", "/tmp/", "/tmp/../etc/passwd", "/tmp/./a", "/tmp//a",
                          "/etc/passwd", "/tmpx/a", "/home/sandboxy/a", "/tmp/a/.."}) {
    EXPECT_FALSE(sched::CheckSandboxPath(p, bad).ok()) << bad;
  }
  EXPECT_FALSE(sched::CheckSandboxPath(p, std::string("/tmp/a\0b", 8)).ok());
}

TEST(JsonCodec, ExecuteBodyFieldsAndTheirErrors) {
  auto b = server::ParseExecuteBody(json{{"code", "print(1)"}, {"timeout", 2.5}, {"memory", "128M"},
                                         {"cpu", "500m"}, {"env", {{"A", "b"}}}, {"stdin", "x"}},
                                    false);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b->overrides.timeout_ms, 2500u);
  EXPECT_EQ(*b->overrides.memory_bytes, 128u << 20);
  EXPECT_DOUBLE_EQ(*b->overrides.cpu, 0.5);
  EXPECT_EQ(b->env.at("A"), "b");

  struct Case {
    json body;
    std::string field;
  };
  for (const auto& c : std::vector<Case>{{json::object(), "code"},
                                         {{{"code", 1}}, "code"},
                                         {{{"code", "1"}, {"timeout", -1}}, "timeout"},
                                         {{{"code", "1"}, {"timeout", "soon"}}, "timeout"},
                                         {{{"code", "1"}, {"memory", true}}, "memory"},
                                         {{{"code", "1"}, {"env", {{"A", 1}}}}, "env.A"},
                                         {{{"code", "1"}, {"files", {{{"path", "/tmp/a"}}}}}, "files[0]"},
                                         {{{"code", "1"}, {"typo", 1}}, "typo"}}) {
    auto r = server::ParseExecuteBody(c.body, false, "tasks[2].");
    ASSERT_FALSE(r.ok()) << c.body.dump();
    EXPECT_EQ(r.error().code, server::ApiCode::kBadRequest);
    EXPECT_EQ(r.error().message.rfind("tasks[2]." + c.field, 0), 0u) << r.error().message;
  }
  auto s = server::ParseExecuteBody(json{{"code", "1"}, {"memory", "1G"}}, true);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("session"), std::string::npos);
}

// Issue 37: an unknown field over HTTP has the policy loader's did-you-mean, in the message and
// as error members a client can read.
TEST(JsonCodec, UnknownFieldsSayWhatWasMeant) {
  auto r = server::ParseExecuteBody(json{{"code", "1"}, {"memroy", "1G"}}, false, "tasks[0].");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("tasks[0].memroy: unknown field; did you mean 'memory'? known fields: ", 0), 0u)
      << r.error().message;
  json err = server::ErrorJson(r.error())["error"];
  EXPECT_EQ(err["did_you_mean"], "memory");
  EXPECT_EQ(err["field"], "tasks[0].memroy");
  EXPECT_TRUE(err["known_fields"].is_array());

  auto f = server::ParseExecuteBody(json{{"code", "1"}, {"files", {{{"path", "/tmp/a"}, {"contnet", "x"}}}}}, false);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message.find("files[0].contnet: unknown field; did you mean 'content'?"), std::string::npos)
      << f.error().message;

  auto s = server::ParseSessionBody(json{{"polcy", "code-sandbox"}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("polcy: unknown field; did you mean 'policy'?"), std::string::npos)
      << s.error().message;

  // Nothing close: no guess, still the list.
  auto far = server::ParseSessionBody(json{{"zzzzzzzz", 1}});
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(far.error().message.find("did you mean"), std::string::npos);
  EXPECT_NE(far.error().message.find("known fields: "), std::string::npos);
}

TEST(JsonCodec, Base64) {
  bool ok = false;
  EXPECT_EQ(server::Base64Decode("aGVsbG8=", &ok), "hello");
  EXPECT_TRUE(ok);
  server::Base64Decode("a$b", &ok);
  EXPECT_FALSE(ok);
}

TEST(ApiError, OneMappingToHttp) {
  EXPECT_EQ(server::HttpStatus(server::ApiCode::kForbidden), 403);
  EXPECT_EQ(server::HttpStatus(server::ApiCode::kSandboxError), 502);
  auto r = server::ErrorResponse(server::FromAdmission(sched::Admission::kQueueFull));
  EXPECT_EQ(r.status, 429);
  bool retry = false;
  for (const auto& [k, v] : r.headers) retry |= k == "Retry-After";
  EXPECT_TRUE(retry);
  EXPECT_EQ(json::parse(r.body)["error"]["code"], "too_many_requests");
  EXPECT_EQ(server::ErrorResponse(server::FromAdmission(sched::Admission::kShuttingDown)).status, 503);
}

// The daemon answers a refused tightening from the error's kind and field, not from its text.
TEST(ApiError, TighteningRefusalsMapByKindAndField) {
  Policy p = TmpPolicy();
  p.memory_bytes = 256ull << 20;
  PolicyOverrides raise;
  raise.memory_bytes = 1ull << 30;
  auto loosened = TightenPolicy(p, raise);
  ASSERT_FALSE(loosened.ok());
  auto e = server::FromTightening(loosened.error(), "tasks[1].");
  EXPECT_EQ(e.code, server::ApiCode::kForbidden);
  EXPECT_EQ(e.message.rfind("tasks[1].memory: resources.memory: ", 0), 0u) << e.message;

  PolicyOverrides tiny;
  tiny.cpu = 0.001;
  auto unusable = TightenPolicy(p, tiny);
  ASSERT_FALSE(unusable.ok());
  e = server::FromTightening(unusable.error(), "");
  EXPECT_EQ(e.code, server::ApiCode::kBadRequest);
  EXPECT_EQ(e.message.rfind("cpu: resources.cpu: ", 0), 0u) << e.message;

  // The field decides, whatever the words: a reworded message maps the same way.
  e = server::FromTightening(Error::PermissionDenied("resources.timeout_grace", "reworded"), "");
  EXPECT_EQ(e.code, server::ApiCode::kForbidden);
  EXPECT_EQ(e.message.rfind("timeout_grace: reworded", 0), 0u) << e.message;
  e = server::FromTightening(Error::PermissionDenied("network.enabled", "x"), "");
  EXPECT_EQ(e.message.rfind("network: x", 0), 0u) << e.message;
  e = server::FromTightening(Error::InvalidArgument("resources.pids", "resources.pids: must be at least 2"), "");
  EXPECT_EQ(e.code, server::ApiCode::kBadRequest);
  EXPECT_EQ(e.message.rfind("policy: resources.pids", 0), 0u) << e.message;
}

TEST(Router, MatchesPatternsAndSays404Or405) {
  server::Router router;
  std::string seen;
  router.Add("GET", "/v1/sessions/{id}/files", [&](server::HttpRequest& req, server::ResponseStream&) {
    seen = req.params.at("id");
    return server::Reply(server::JsonResponse(200, json::object()));
  });
  struct NoStream : server::ResponseStream {
    bool Begin(int, const std::string&) override { return false; }
    bool Write(std::string_view) override { return false; }
  } out;
  server::HttpRequest req;
  req.method = "GET";
  req.path = "/v1/sessions/ses-1/files";
  EXPECT_EQ(router.Dispatch(req, out).response.status, 200);
  EXPECT_EQ(seen, "ses-1");
  req.method = "DELETE";
  EXPECT_EQ(router.Dispatch(req, out).response.status, 405);
  req.path = "/v1/sessions/ses-1";
  EXPECT_EQ(router.Dispatch(req, out).response.status, 404);
}

TEST(Daemon, LoopbackDetection) {
  EXPECT_TRUE(server::IsLoopback("127.0.0.1"));
  EXPECT_TRUE(server::IsLoopback("127.1.2.3"));
  EXPECT_TRUE(server::IsLoopback("::1"));
  EXPECT_TRUE(server::IsLoopback("localhost"));
  EXPECT_FALSE(server::IsLoopback("0.0.0.0"));
  EXPECT_FALSE(server::IsLoopback("::"));
  EXPECT_FALSE(server::IsLoopback("10.0.0.1"));
}

TEST(Executor, BoundedQueueAnswersQueueFullThenShutsDown) {
  sched::Executor ex(1, 1);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<int> ran{0}, cancelled{0};
  auto task = [&](bool c) {
    if (c) {
      ++cancelled;
      return;
    }
    gate.wait();
    ++ran;
  };
  ASSERT_EQ(ex.Submit(task), sched::Admission::kAccepted);  // runs, blocks on the gate
  while (ex.running() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(ex.Submit(task), sched::Admission::kAccepted);  // queued
  EXPECT_EQ(ex.Submit(task), sched::Admission::kQueueFull);
  release.set_value();
  ex.Shutdown();
  EXPECT_EQ(ex.Submit(task), sched::Admission::kShuttingDown);
  EXPECT_EQ(ran + cancelled, 2);
}

}  // namespace
}  // namespace lsb
