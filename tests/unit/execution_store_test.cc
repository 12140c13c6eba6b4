// The kept results of asynchronous executions (server/execution_store.h): bounded in count and
// bytes (the oldest finished go first), pending ones never evicted, owners kept apart.
#include <gtest/gtest.h>

#include "server/execution_store.h"

namespace lsb::server {
namespace {

using nlohmann::json;

json Result(const std::string& out) { return {{"stdout", out}, {"stderr", ""}, {"alerts", json::array()}}; }

TEST(ExecutionStore, QueuedRunningFinishedAndOwned) {
  ExecutionStore s;
  ASSERT_TRUE(s.Add("ex-1", "tok-a", "code-sandbox"));
  EXPECT_EQ(s.Find("ex-1", "tok-a")->at("state"), "queued");
  EXPECT_FALSE(s.Find("ex-1", "tok-b"));  // another owner: as if it never existed
  s.Start("ex-1");
  EXPECT_EQ(s.Find("ex-1", "tok-a")->at("state"), "running");
  s.Finish("ex-1", Result("hi"));
  auto v = s.Find("ex-1", "tok-a");
  EXPECT_EQ(v->at("state"), "finished");
  EXPECT_EQ(v->at("result").at("stdout"), "hi");
  s.Finish("ex-2", Result("unknown"));  // never added: ignored
  EXPECT_EQ(s.size(), 1u);
}

// One table for the "state" words of docs/api.md: each state has its word, and it parses back.
TEST(ExecutionStore, StateTableRoundTripsWithTheApiSpelling) {
  const std::pair<ExecutionState, const char*> words[] = {
      {ExecutionState::kQueued, "queued"}, {ExecutionState::kRunning, "running"}, {ExecutionState::kFinished, "finished"}};
  for (const auto& [state, word] : words) {
    EXPECT_STREQ(ExecutionStateName(state), word);
    EXPECT_EQ(ParseExecutionState(word), state);
  }
  EXPECT_FALSE(ParseExecutionState("done"));
}

TEST(ExecutionStore, CountBoundEvictsTheOldestFinishedAndRefusesWhenAllPend) {
  ExecutionStore s({2, 1 << 20, 1 << 20});
  ASSERT_TRUE(s.Add("a", "", "p"));
  ASSERT_TRUE(s.Add("b", "", "p"));
  EXPECT_FALSE(s.Add("c", "", "p"));  // both pending: nothing may go
  s.Finish("a", Result("1"));
  ASSERT_TRUE(s.Add("c", "", "p"));
  EXPECT_FALSE(s.Find("a", ""));
  EXPECT_TRUE(s.Find("b", ""));
}

TEST(ExecutionStore, ByteBoundAndOneResultIsCut) {
  ExecutionStore s({100, 3000, 2000});
  ASSERT_TRUE(s.Add("big", "", "p"));
  s.Finish("big", Result(std::string(10000, 'x')));
  auto v = s.Find("big", "");
  ASSERT_TRUE(v);
  EXPECT_TRUE(v->at("result").value("response_truncated", false));
  EXPECT_LE(s.bytes(), 2000u);
  ASSERT_TRUE(s.Add("next", "", "p"));
  s.Finish("next", Result(std::string(1500, 'y')));
  EXPECT_LE(s.bytes(), 3000u);
  EXPECT_FALSE(s.Find("big", ""));  // the oldest went to make room
  EXPECT_TRUE(s.Find("next", ""));
}

TEST(ExecutionStore, AnErrorIsKeptAsTheError) {
  ExecutionStore s;
  ASSERT_TRUE(s.Add("e", "", "p"));
  s.Finish("e", {{"error", {{"code", "sandbox_error"}, {"message", "init died"}}}});
  auto v = s.Find("e", "");
  EXPECT_EQ(v->at("error").at("code"), "sandbox_error");
  EXPECT_FALSE(v->contains("result"));
}

}  // namespace
}  // namespace lsb::server
