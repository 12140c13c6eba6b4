// docs/security.md, class 2: what a box can make the host keep is bounded (alert coalescing, the JSON size
// of results, the live-event queues, the SSE hand-off).
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "monitor/event_bus.h"
#include "protocol/alert_coalescer.h"
#include "server/json_budget.h"
#include "server/sse_queue.h"

namespace lsb {
namespace {

using protocol::AlertBounds;
using protocol::AlertCoalescer;
using protocol::AlertRule;
using protocol::Event;

Event Alert(AlertRule rule, const std::string& address, uint64_t t = 0) {
  Event e;
  e.kind = "connect";
  e.rule = rule;
  e.severity = protocol::Severity::kWarning;
  e.address = address;
  e.time_ms = t;
  return e;
}

uint64_t Total(const std::vector<Event>& v) {
  uint64_t n = 0;
  for (const auto& e : v) n += e.count;
  return n;
}

TEST(AlertCoalescer, PassesTheFirstPerKeyAndTotalThenOneSummaryPerRuleWithTheCount) {
  AlertCoalescer c;  // total 100, per key 10
  uint64_t passed = 0;
  for (int i = 0; i < 50000; ++i) passed += c.Admit(Alert(AlertRule::kNetworkAttempt, "127.0.0.1:6379", i));
  EXPECT_EQ(passed, 10u);  // one key: its first ten
  for (int i = 0; i < 1000; ++i) passed += c.Admit(Alert(AlertRule::kNetworkAttempt, "10.0.0." + std::to_string(i) + ":80"));
  EXPECT_EQ(passed, 100u);  // the total
  auto s = c.TakeSummaries();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].kind, "summary");
  EXPECT_EQ(s[0].rule, AlertRule::kNetworkAttempt);
  EXPECT_EQ(passed + s[0].count, 51000u);  // every attempt is accounted for
  EXPECT_EQ(c.seen(), 51000u);
  EXPECT_TRUE(c.TakeSummaries().empty());
}

TEST(AlertCoalescer, ARunsOutcomeNeverWaitsBehindAFloodAndStaysBounded) {
  AlertCoalescer c;
  for (int i = 0; i < 1000; ++i) c.Admit(Alert(AlertRule::kDeniedExec, "/bin/sh" + std::to_string(i)));
  Event timeout = Alert(AlertRule::kTimeout, "");
  EXPECT_TRUE(c.Admit(timeout));
  uint64_t more = 0;
  for (int i = 0; i < 1000; ++i) {  // a subverted init repeating it, with varying paths
    timeout.path = std::to_string(i);
    more += c.Admit(timeout);
  }
  EXPECT_EQ(more, 9u);  // per_key of the rule in all
}

// A rule name a subverted init makes up never gets here: it does not parse (wire_values_test), so
// the rules to hold summaries for are the table's, one summary each.
TEST(AlertCoalescer, MergesTheOtherSidesSummariesIntoOnePerRule) {
  AlertCoalescer c;
  Event from_init = Alert(AlertRule::kDeniedExec, "");
  from_init.kind = "summary";
  from_init.count = 12345;
  EXPECT_FALSE(c.Admit(from_init));  // a summary never passes one by one
  uint64_t sent = 0, passed = 0;
  for (const auto& rule : protocol::AlertRules())
    for (int i = 0; i < 200; ++i, ++sent) passed += c.Admit(Alert(rule.rule, "a" + std::to_string(i), i));
  auto s = c.TakeSummaries();
  EXPECT_EQ(s.size(), protocol::AlertRules().size());  // every rule had alerts held back (200 > the total)
  for (size_t i = 1; i < s.size(); ++i) EXPECT_LT(s[i - 1].rule, s[i].rule);  // one each, in table order
  EXPECT_EQ(Total(s), 12345u + sent - passed);
}

TEST(AlertCoalescer, InitsBudgetRefillsOverTime) {
  AlertCoalescer c(protocol::InitAlertBounds());  // 20 a second
  uint64_t passed = 0;
  for (int i = 0; i < 1000; ++i) passed += c.Admit(Alert(AlertRule::kNetworkAttempt, "k" + std::to_string(i), 0));
  EXPECT_EQ(passed, 100u);
  for (int i = 0; i < 1000; ++i) passed += c.Admit(Alert(AlertRule::kNetworkAttempt, "j" + std::to_string(i), 10000));
  EXPECT_EQ(passed, 200u);  // 10 s later: the bucket refilled to its capacity, no more
  EXPECT_EQ(passed + Total(c.TakeSummaries()), 2000u);
}

TEST(AlertCoalescer, TraceEventsHaveTheirOwnBound) {
  AlertCoalescer c;
  Event t;
  t.kind = "open";
  uint64_t passed = 0;
  for (int i = 0; i < 5000; ++i) passed += c.Admit(t);
  EXPECT_EQ(passed, 1000u);
  auto s = c.TakeSummaries();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].rule, AlertRule::kNone);
  EXPECT_EQ(s[0].count, 4000u);
}

TEST(JsonBudget, CountsBytesAsEncodedAndCutsResultsToFit) {
  std::string nuls(100000, '\0');
  EXPECT_EQ(server::JsonStringBytes(nuls), 600000u);
  EXPECT_GE(server::JsonStringBytes("\xff\xfe"), nlohmann::json("\xff\xfe").dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).size() - 2);
  std::string utf8 = "\xc3\xa9\xc3\xa9";  // éé: a cut never splits a sequence
  EXPECT_EQ(server::JsonStringBytes(utf8), 4u);
  EXPECT_EQ(server::JsonPrefixFor(utf8, 3), 2u);
  EXPECT_EQ(server::JsonPrefixFor(utf8, 4), 4u);
  EXPECT_EQ(server::JsonStringBytes("\xed\xa0\x80"), 9u);  // a surrogate: replaced, 3 bytes each
  nlohmann::json r = {{"stdout", nuls}, {"stderr", nuls}, {"truncated", false}, {"alerts", nlohmann::json::array()}};
  size_t bytes = server::FitResultJson(r, 64 * 1024);
  EXPECT_LE(bytes, 64u * 1024);
  EXPECT_EQ(bytes, server::JsonBytes(r));
  EXPECT_TRUE(r["truncated"].get<bool>());
  EXPECT_TRUE(r["response_truncated"].get<bool>());
  EXPECT_GT(r["stdout"].get<std::string>().size(), 5000u);  // most of the room goes to stdout
  nlohmann::json small = {{"stdout", "hi"}, {"truncated", false}};
  server::FitResultJson(small, 1024);
  EXPECT_FALSE(small.contains("response_truncated"));
}

TEST(EventBus, ASubscribersQueueIsBoundedInBytes) {
  monitor::EventBus bus(1024, 64 * 1024);
  auto sub = bus.Subscribe({}, "");
  for (int i = 0; i < 100; ++i) bus.Publish("alert", {{"blob", std::string(10000, 'x')}}, "");
  size_t got = 0, bytes = 0;
  while (auto e = sub->Next(std::chrono::milliseconds(0))) {
    ++got;
    bytes += e->bytes;
  }
  EXPECT_LE(bytes, 64u * 1024);
  EXPECT_GT(got, 0u);
  EXPECT_EQ(sub->TakeDropped(), 100u - got);
}

TEST(SseQueue, PushNeverWaitsDropsPastItsBoundAndTellsTheClient) {
  server::SseQueue q(10000);
  for (int i = 0; i < 100; ++i) q.Push(std::string(1000, 'a'));  // nobody pops: none of this waits
  q.Finish("event: result\n\n");
  EXPECT_EQ(q.dropped_events(), 90u);
  size_t chunks = 0;
  std::string last;
  bool noted = false;
  while (auto c = q.Pop()) {
    ++chunks;
    last = *c;
    noted = noted || c->find("event: dropped") != std::string::npos;
  }
  EXPECT_EQ(chunks, 11u);
  EXPECT_TRUE(noted);
  EXPECT_NE(last.find("event: result"), std::string::npos);
}

}  // namespace
}  // namespace lsb
