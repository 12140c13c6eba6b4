// network.allow / deny / secrets: parsing, checks across fields, tightening, and the rules'
// matching (policy/network_rules.h).
#include <gtest/gtest.h>

#include <string>

#include "policy/network_rules.h"
#include "policy/tighten.h"
#include "policy_parse_helpers.h"

namespace lsb {
namespace {

std::string Policy_(const std::string& network, const std::string& backend = "native",
                    const std::string& image = "host") {
  return "version: \"1.0\"\nname: t\nbackend: " + backend + "\ncontainer:\n  image: " + image + "\nnetwork:\n" + network;
}
std::string DockerPolicy(const std::string& network) { return Policy_(network, "docker", "python:3.12-slim"); }

TEST(NetworkPolicy, ParsesAllowDenyAndSecrets) {
  Policy p = MustParse(Policy_(
      "  enabled: true\n  allow: [\"PyPI.org\", \"*.github.com\", \"api.example.com:443\", \"10.0.0.0/8\", \"[::1]:80\"]\n"
      "  deny: [\"gist.github.com\"]\n"
      "  secrets:\n    - host: api.example.com\n      header: Authorization\n      value: \"Bearer ${EXAMPLE_TOKEN}\"\n"));
  EXPECT_TRUE(p.network_enabled);
  ASSERT_EQ(p.network_allow.size(), 5u);
  EXPECT_EQ(p.network_deny, std::vector<std::string>{"gist.github.com"});
  ASSERT_EQ(p.network_secrets.size(), 1u);
  EXPECT_EQ(p.network_secrets[0].host, "api.example.com");
  EXPECT_EQ(p.network_secrets[0].value, "Bearer ${EXAMPLE_TOKEN}");
}

TEST(NetworkPolicy, NativeAcceptsNetworkEnabled) {
  Policy p = MustParse(Policy_("  enabled: true\n  allow: [\"pypi.org\"]\n"));
  EXPECT_TRUE(p.network_enabled);
  EXPECT_FALSE(p.NetworkUnfiltered());
  EXPECT_TRUE(MustParse(Policy_("  enabled: true\n  allow: [\"*\"]\n")).NetworkUnfiltered());
}

TEST(NetworkPolicy, BadEntriesNameTheFieldAndTheEntry) {
  for (const char* bad : {"\"*.*.com\"", "\"a*b.com\"", "\"pypi.org:0\"", "\"pypi.org:\"", "\"exa mple.com\"",
                          "\"10.0.0.0/33\"", "\"host:99999\"", "\"-bad.com\""}) {
    std::string e = ParseError(Policy_(std::string("  enabled: true\n  allow: [") + bad + "]\n"));
    EXPECT_NE(e.find("network.allow"), std::string::npos) << bad << ": " << e;
  }
  std::string dup = ParseError(Policy_("  enabled: true\n  deny: [\"a.com\", \"a.com\"]\n"));
  EXPECT_NE(dup.find("listed twice"), std::string::npos) << dup;
}

TEST(NetworkPolicy, SecretsAreValidated) {
  auto secret = [](const std::string& fields) {
    return Policy_("  enabled: true\n  allow: [\"api.example.com\"]\n  secrets:\n    - " + fields + "\n");
  };
  EXPECT_NE(ParseError(secret("{host: api.example.com, header: Authorization, value: \"plain-secret\"}")).find("names no ${VARIABLE}"),
            std::string::npos);
  EXPECT_NE(ParseError(secret("{host: api.example.com, header: Authorization, value: \"Bearer $TOKEN\"}")).find("network.secrets[0].value"),
            std::string::npos);
  EXPECT_NE(ParseError(secret("{host: \"*.example.com\", header: Authorization, value: \"${T}\"}")).find("network.secrets[0].host"),
            std::string::npos);
  EXPECT_NE(ParseError(secret("{host: api.example.com, header: \"Bad Header\", value: \"${T}\"}")).find("network.secrets[0].header"),
            std::string::npos);
  EXPECT_NE(ParseError(secret("{host: api.example.com, header: Authorization}")).find("needs host, header and value"),
            std::string::npos);
  EXPECT_NE(ParseError(secret("{host: other.example.com, header: Authorization, value: \"${T}\"}")).find("not named by network.allow"),
            std::string::npos);
  EXPECT_NE(ParseError(secret("{host: api.example.com, header: A, value: \"${T}\", extra: 1}")).find("extra"),
            std::string::npos);
}

TEST(NetworkPolicy, ListsNeedTheNetworkOn) {
  std::string e = ParseError(Policy_("  enabled: false\n  allow: [\"pypi.org\"]\n"));
  EXPECT_NE(e.find("only mean something with network.enabled: true"), std::string::npos) << e;
}

TEST(NetworkPolicy, DockerEnforcesListsOnRuncAndRefusesThemUnderGvisor) {
  // runc: the egress proxy in the container's namespace (runtime/docker/egress_attach.h).
  MustParse(DockerPolicy("  enabled: true\n  allow: [\"pypi.org\"]\n  deny: [\"x.pypi.org\"]\n"));
  MustParse(DockerPolicy("  enabled: true\n"));  // nothing reachable: also the proxy
  MustParse(DockerPolicy("  enabled: true\n  allow: [\"*\"]\n"));
  // runsc: gVisor's own network stack never sees the proxy's socket; only the bridge.
  auto gvisor = [](const std::string& network) {
    return "version: \"1.0\"\nname: t\nbackend: docker\ncontainer:\n  image: python:3.12-slim\n  runtime: runsc\n"
           "  gvisor_accept_weaker: true\nnetwork:\n" + network;
  };
  std::string e = ParseError(gvisor("  enabled: true\n  allow: [\"pypi.org\"]\n"));
  EXPECT_NE(e.find("gVisor's own network stack"), std::string::npos) << e;
  EXPECT_NE(e.find("runtime: runc"), std::string::npos) << e;
  std::string none = ParseError(gvisor("  enabled: true\n"));
  EXPECT_NE(none.find("gVisor's own network stack"), std::string::npos) << none;
  MustParse(gvisor("  enabled: true\n  allow: [\"*\"]\n"));
}

NetworkRule Rule(const std::string& text) {
  auto r = ParseNetworkRule(text);
  EXPECT_TRUE(r.ok()) << text << ": " << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : NetworkRule{};
}

TEST(NetworkRules, WildcardMatchesNamesBelowNeverTheNameItself) {
  NetworkRule w = Rule("*.github.com");
  EXPECT_TRUE(RuleMatchesName(w, "api.github.com", 443));
  EXPECT_TRUE(RuleMatchesName(w, "a.b.github.com", 80));
  EXPECT_FALSE(RuleMatchesName(w, "github.com", 443));
  EXPECT_FALSE(RuleMatchesName(w, "evilgithub.com", 443));
  NetworkRule port = Rule("api.example.com:443");
  EXPECT_TRUE(RuleMatchesName(port, "api.example.com", 443));
  EXPECT_FALSE(RuleMatchesName(port, "api.example.com", 80));
  EXPECT_EQ(Rule("PyPI.Org.").name, "pypi.org");
}

TEST(NetworkRules, AddressesAndRanges) {
  auto a = [](const char* s) { return *ParseIpLiteral(s); };
  EXPECT_TRUE(RuleCoversAddress(Rule("10.0.0.0/8"), a("10.200.1.1"), 80));
  EXPECT_FALSE(RuleCoversAddress(Rule("10.0.0.0/8"), a("11.0.0.1"), 80));
  EXPECT_TRUE(RuleCoversAddress(Rule("[::1]:80"), a("::1"), 80));
  EXPECT_FALSE(RuleCoversAddress(Rule("[::1]:80"), a("::1"), 81));
  EXPECT_TRUE(RuleCoversAddress(Rule("127.0.0.1"), a("::ffff:127.0.0.1"), 5));  // mapped = the IPv4 address
  EXPECT_FALSE(RuleCoversAddress(Rule("*"), a("1.2.3.4"), 80));                  // "*" is names only
  EXPECT_FALSE(RuleCoversAddress(Rule("localhost"), a("127.0.0.1"), 80));
}

TEST(NetworkRules, CoversOnlyNarrowerEntries) {
  EXPECT_TRUE(RuleCovers(Rule("*"), Rule("pypi.org")));
  EXPECT_TRUE(RuleCovers(Rule("*.github.com"), Rule("api.github.com:443")));
  EXPECT_TRUE(RuleCovers(Rule("*.github.com"), Rule("*.api.github.com")));
  EXPECT_FALSE(RuleCovers(Rule("*.github.com"), Rule("github.com")));
  EXPECT_FALSE(RuleCovers(Rule("pypi.org:443"), Rule("pypi.org")));
  EXPECT_FALSE(RuleCovers(Rule("*"), Rule("127.0.0.1")));
  EXPECT_TRUE(RuleCovers(Rule("10.0.0.0/8"), Rule("10.1.0.0/16")));
  EXPECT_FALSE(RuleCovers(Rule("10.1.0.0/16"), Rule("10.0.0.0/8")));
}

TEST(NetworkPolicy, RequestMayNarrowTheAllowlistNeverWiden) {
  Policy p = MustParse(Policy_("  enabled: true\n  allow: [\"*.github.com\", \"pypi.org\"]\n"));
  PolicyOverrides o;
  o.network_allow = std::vector<std::string>{"api.github.com"};
  auto narrowed = TightenPolicy(p, o);
  ASSERT_TRUE(narrowed.ok()) << narrowed.error().message;
  EXPECT_EQ(narrowed->network_allow, std::vector<std::string>{"api.github.com"});
  o.network_allow = std::vector<std::string>{"evil.com"};
  auto wider = TightenPolicy(p, o);
  ASSERT_FALSE(wider.ok());
  EXPECT_TRUE(wider.error().IsPermissionDenied());
  EXPECT_EQ(wider.error().field, "network.allow");
  o.network_allow = std::vector<std::string>{"*"};
  EXPECT_FALSE(TightenPolicy(p, o).ok());
  o.network_allow = std::vector<std::string>{"bad name"};
  auto bad = TightenPolicy(p, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  Policy off = MustParse(Policy_("  enabled: false\n"));
  o.network_allow = std::vector<std::string>{};
  EXPECT_TRUE(TightenPolicy(off, o).error().IsPermissionDenied());
}

TEST(NetworkPolicy, SecretVariables) {
  auto v = SecretVariables("Bearer ${A_1}$$ and ${B}");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, (std::vector<std::string>{"A_1", "B"}));
  EXPECT_FALSE(SecretVariables("${1A}").ok());
  EXPECT_FALSE(SecretVariables("${A").ok());
}

}  // namespace
}  // namespace lsb
