// Ownership's pure parts (docs/security.md "Ownership"): a token's owner id, and the event bus
// delivering an event only to subscribers of the same owner. The routes are tested end to end by
// tests/integration/test_daemon_ownership.py.
#include <gtest/gtest.h>

#include "monitor/event_bus.h"
#include "server/owner.h"

namespace lsb {
namespace {

TEST(Ownership, OwnerOfTokenIsStableDistinctAndHidesTheToken) {
  std::string a = server::OwnerOfToken("alice-secret");
  EXPECT_EQ(a, server::OwnerOfToken("alice-secret"));
  EXPECT_NE(a, server::OwnerOfToken("alice-secreT"));
  EXPECT_EQ(a.size(), 4u + 16u);
  EXPECT_EQ(a.rfind("tok-", 0), 0u);
  EXPECT_EQ(a.find("alice"), std::string::npos);
  EXPECT_NE(a, "");  // never the no-token user's id
}

TEST(Ownership, EventsReachOnlyTheirOwnersSubscribers) {
  monitor::EventBus bus;
  auto alice = bus.Subscribe({}, "tok-a");
  auto bob = bus.Subscribe({}, "tok-b");
  auto alice_alerts = bus.Subscribe({"alert"}, "tok-a");
  auto single_user = bus.Subscribe({}, "");
  bus.Publish("execution_started", {{"execution_id", "ex-1"}}, "tok-a");
  bus.Publish("alert", {{"execution_id", "ex-1"}}, "tok-a");
  bus.Publish("session_created", {{"session_id", "ses-2"}}, "tok-b");
  auto drain = [](monitor::Subscription& s) {
    std::vector<std::string> types;
    while (auto e = s.Next(std::chrono::milliseconds(0))) types.push_back(e->type);
    return types;
  };
  EXPECT_EQ(drain(*alice), (std::vector<std::string>{"execution_started", "alert"}));
  EXPECT_EQ(drain(*alice_alerts), (std::vector<std::string>{"alert"}));
  EXPECT_EQ(drain(*bob), (std::vector<std::string>{"session_created"}));
  EXPECT_TRUE(drain(*single_user).empty());  // "" is an owner too, not a wildcard
}

}  // namespace
}  // namespace lsb
