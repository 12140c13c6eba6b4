// The typed values of the init protocol (protocol/wire_values.h): each enum's table round-trips,
// the JSON spelling is the one old hosts, old inits and the clients read, and a word that is not
// in a table is a protocol error naming the field, never a silent default. Built into init's own
// test binary: the static init links these same tables.
#include <set>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "protocol/alert_coalescer.h"
#include "protocol/messages.h"
#include "protocol/wire_values.h"

namespace lsb::protocol {
namespace {

// Every enumerator of E from 0 to `last`: its word is unique, not the "?" of a missing row, and
// parses back to it.
template <typename E, typename ParseFn>
void ExpectRoundTrip(E last, ParseFn parse) {
  std::set<std::string> words;
  for (int i = 0; i <= static_cast<int>(last); ++i) {
    const E v = static_cast<E>(i);
    const std::string word = Name(v);
    EXPECT_NE(word, "?") << "enumerator " << i << " has no row in its table";
    EXPECT_TRUE(words.insert(word).second) << "two enumerators are spelled \"" << word << "\"";
    auto back = parse(word);
    ASSERT_TRUE(back.has_value()) << word;
    EXPECT_EQ(*back, v) << word;
    nlohmann::json j = v;
    EXPECT_EQ(j, word);
    EXPECT_EQ(j.get<E>(), v);
  }
}

TEST(WireValues, EveryTableRoundTrips) {
  ExpectRoundTrip(BoxMode::kInPlace, ParseBoxMode);
  ExpectRoundTrip(ExecStatus::kOutputLimit, ParseExecStatus);
  ExpectRoundTrip(Severity::kCritical, ParseSeverity);
  ExpectRoundTrip(AlertRule::kInterpreterRestarted, ParseAlertRule);
  ExpectRoundTrip(ErrorStage::kProtocol, ParseErrorStage);
  EXPECT_EQ(AllExecStatuses().size(), 8u);  // ok, timeout, oom, denied, killed, output_limit, error, reset
  EXPECT_EQ(AllSeverities().size(), 3u);
}

// The words on the wire, written out: changing one breaks old host/init pairs and the clients.
TEST(WireValues, TheJsonSpellingIsTheOneTheProtocolAlwaysHad) {
  EXPECT_EQ(nlohmann::json(BoxSetup{})["mode"], "build_root");
  BoxSetup in_place;
  in_place.mode = BoxMode::kInPlace;
  EXPECT_EQ(nlohmann::json(in_place)["mode"], "in_place");

  const char* kOldEvent =
      R"({"kind":"connect","severity":"critical","rule":"network_attempt","message":"m","address":"10.0.0.1:80"})";
  Event e = ParseMessage<Event>(kOldEvent);
  EXPECT_EQ(e.rule, AlertRule::kNetworkAttempt);
  EXPECT_EQ(e.severity, Severity::kCritical);
  nlohmann::json back = e;
  EXPECT_EQ(back["rule"], "network_attempt");
  EXPECT_EQ(back["severity"], "critical");

  Event trace = ParseMessage<Event>(R"({"kind":"exec","severity":"info","rule":""})");
  EXPECT_EQ(trace.rule, AlertRule::kNone);
  EXPECT_EQ(nlohmann::json(trace)["rule"], "");

  const std::pair<const char*, ExecStatus> statuses[] = {
      {"ok", ExecStatus::kOk},         {"error", ExecStatus::kError},   {"timeout", ExecStatus::kTimeout},
      {"oom", ExecStatus::kOom},       {"killed", ExecStatus::kKilled}, {"denied", ExecStatus::kDenied},
      {"output_limit", ExecStatus::kOutputLimit}};
  for (const auto& [word, status] : statuses) {
    auto rep = ParseMessage<ExitReport>(std::string(R"({"status":")") + word + "\"}");
    EXPECT_EQ(rep.status, status) << word;
  }
  EXPECT_EQ(ParseMessage<InitError>(R"({"stage":"setup","message":"x"})").stage, ErrorStage::kSetup);
  EXPECT_EQ(ParseMessage<InitError>(R"({"stage":"run","message":"x"})").stage, ErrorStage::kRun);
  EXPECT_EQ(ParseMessage<InitReady>(R"({"mode":"in_place"})").mode, BoxMode::kInPlace);
}

// The message a caller reports: names the field and the words it takes.
std::string RefusalOf(auto parse) {
  try {
    parse();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(WireValues, AnUnknownWordIsAProtocolErrorNamingTheFieldNotADefault) {
  std::string m = RefusalOf([] { ParseMessage<Event>(R"({"kind":"connect","rule":"exfiltrate","severity":"warning"})"); });
  EXPECT_NE(m.find("rule \"exfiltrate\" is not one of"), std::string::npos) << m;
  EXPECT_NE(m.find("\"network_attempt\""), std::string::npos) << m;

  m = RefusalOf([] { ParseMessage<Event>(R"({"kind":"connect","rule":"timeout","severity":"loud"})"); });
  EXPECT_NE(m.find("severity \"loud\" is not one of \"info\", \"warning\", \"critical\""), std::string::npos) << m;

  m = RefusalOf([] { ParseMessage<ExitReport>(R"({"status":"exploded","exit_code":1})"); });
  EXPECT_NE(m.find("status \"exploded\" is not one of"), std::string::npos) << m;

  m = RefusalOf([] { ParseMessage<BoxSetup>(R"({"mode":"chroot"})"); });
  EXPECT_NE(m.find("mode \"chroot\" is not one of \"build_root\", \"in_place\""), std::string::npos) << m;

  m = RefusalOf([] { ParseMessage<InitError>(R"({"stage":"later","message":"x"})"); });
  EXPECT_NE(m.find("stage \"later\""), std::string::npos) << m;

  // Not a string at all: refused too, not read as an enumerator's number.
  m = RefusalOf([] { ParseMessage<ExitReport>(R"({"status":0})"); });
  EXPECT_NE(m.find("status must be a string"), std::string::npos) << m;
  m = RefusalOf([] { ParseMessage<Event>(R"({"rule":1})"); });
  EXPECT_NE(m.find("rule must be a string"), std::string::npos) << m;
  // Case matters: the table's words only.
  EXPECT_FALSE(ParseSeverity("Warning"));
  EXPECT_FALSE(ParseAlertRule("Timeout"));
}

// The one table of rules: what init and the host raise each rule with, and which are outcomes.
TEST(WireValues, TheAlertRuleTableHoldsEachRuleOnceWithItsDefaultSeverity) {
  std::set<AlertRule> seen;
  for (const auto& r : AlertRules()) {
    EXPECT_NE(r.rule, AlertRule::kNone);
    EXPECT_TRUE(seen.insert(r.rule).second) << r.name;
    EXPECT_EQ(&RuleInfo(r.rule), &r);
    EXPECT_FALSE(std::string(r.what).empty()) << r.name;
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(AlertRule::kNetworkDenied));  // every rule but kNone
  EXPECT_EQ(DefaultSeverity(AlertRule::kEscapeSyscall), Severity::kCritical);
  EXPECT_EQ(DefaultSeverity(AlertRule::kOomKill), Severity::kCritical);
  EXPECT_EQ(DefaultSeverity(AlertRule::kNetworkAttempt), Severity::kWarning);
  EXPECT_EQ(DefaultSeverity(AlertRule::kDeniedExec), Severity::kWarning);
  EXPECT_EQ(DefaultSeverity(AlertRule::kNetworkDenied), Severity::kWarning);
  std::set<AlertRule> outcomes;
  for (const auto& r : AlertRules())
    if (AlertCoalescer::IsOutcomeRule(r.rule)) outcomes.insert(r.rule);
  EXPECT_EQ(outcomes, (std::set<AlertRule>{AlertRule::kOomKill, AlertRule::kPidsLimit, AlertRule::kTimeout,
                                           AlertRule::kOutputFlood}));
  Event alert = MakeAlert(AlertRule::kEscapeSyscall, "syscall", "mount refused");
  EXPECT_EQ(alert.severity, Severity::kCritical);
  EXPECT_EQ(Severity::kInfo < Severity::kWarning, true);  // webhooks rely on the order
  EXPECT_EQ(Severity::kWarning < Severity::kCritical, true);
}

}  // namespace
}  // namespace lsb::protocol
