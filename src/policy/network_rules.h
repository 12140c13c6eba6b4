// The entries of network.allow / network.deny (docs/network.md): a host name ("pypi.org"), a
// wildcard ("*.github.com": every name below github.com, never github.com itself), "*" (any name),
// or an address literal ("10.1.2.3", "[2001:db8::1]", "10.0.0.0/8"), each with an optional
// ":port". Pure: text in, rules and verdicts out; the egress proxy (src/egress/) applies them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace lsb {

// An IPv4 or IPv6 address; an IPv4-mapped IPv6 address (::ffff:a.b.c.d) is kept as the IPv4 one,
// so a rule or a range check cannot be dodged by writing it the other way.
struct IpAddress {
  int family = 0;                    // AF_INET | AF_INET6
  std::array<uint8_t, 16> bytes{};   // network order; the first 4 for AF_INET
  std::string ToString() const;      // "10.1.2.3", "2001:db8::1"
  bool operator==(const IpAddress&) const = default;
};

// "10.1.2.3", "2001:db8::1", "[2001:db8::1]"; nullopt for anything else (names included).
std::optional<IpAddress> ParseIpLiteral(std::string_view text);

struct NetworkRule {
  enum class Kind { kAnyName, kName, kWildcard, kAddress };
  Kind kind = Kind::kName;
  std::string name;      // kName: the name; kWildcard: the suffix ("github.com" for "*.github.com")
  IpAddress address;     // kAddress: the network address (host bits cleared)
  int prefix = 0;        // kAddress: prefix length (32 / 128 for a single address)
  uint16_t port = 0;     // 0: every port
  std::string text;      // as written, for messages
};

// Lower case, one trailing dot dropped; an error (naming what is wrong) when it is not a DNS name
// of letters, digits and '-' in labels of 1-63 characters, at most 253 in all.
Result<std::string> NormalizeHostName(std::string_view name);

// One entry as written in network.allow / network.deny. The error's message says what is wrong
// with it (the caller adds the field).
Result<NetworkRule> ParseNetworkRule(std::string_view text);

// Whether `rule` matches the name `host` (normalized, not an address) on `port`. Address rules never
// match a name, and "*" matches every name but no address.
bool RuleMatchesName(const NetworkRule& rule, std::string_view host, uint16_t port);
// Whether an address rule covers `addr` on `port`. Name rules never do.
bool RuleCoversAddress(const NetworkRule& rule, const IpAddress& addr, uint16_t port);
// Whether everything `narrow` matches, `wide` matches too (a request may narrow network.allow).
bool RuleCovers(const NetworkRule& wide, const NetworkRule& narrow);

// network.secrets[i].value: "${NAME}" parts (NAME: [A-Za-z_][A-Za-z0-9_]*) are filled from the
// daemon's environment, "$$" is a literal '$'; any other '$' is an error. Returns the names used.
Result<std::vector<std::string>> SecretVariables(std::string_view value);

}  // namespace lsb
