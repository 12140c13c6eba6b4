// The verdicts of the egress proxy (docs/network.md): a target (name or address literal, port)
// against network.allow / network.deny, and each address a name resolved to against the ranges
// that are never reached through a name. Pure but for the host's own addresses, which the caller
// reads once (HostAddresses) and passes in.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "policy/network_rules.h"

namespace lsb::egress {

struct Verdict {
  bool allowed = false;
  std::string why;  // for a refusal: "not in network.allow", "denied by network.deny entry 'x'", ...
};

// Loopback, link-local (169.254.0.0/16 with the cloud metadata address, fe80::/10), private
// (10/8, 172.16/12, 192.168/16, fc00::/7), carrier-grade NAT, unspecified, multicast, broadcast,
// reserved and documentation ranges, or one of `host_own`: its name ("loopback", ...); "" otherwise.
std::string SpecialRange(const IpAddress& addr, const std::vector<IpAddress>& host_own);

// The addresses of this host's interfaces now (getifaddrs); empty when they cannot be read.
std::vector<IpAddress> HostAddresses();

class EgressRules {
 public:
  // From the policy's lists as the loader checked them; an entry that does not parse is an error.
  static Result<EgressRules> Parse(const std::vector<std::string>& allow, const std::vector<std::string>& deny);

  // The target as the program named it: `host` a normalized name or an address literal.
  Verdict CheckTarget(const std::string& host, uint16_t port) const;
  // One address `host` resolved to (or the literal itself): refused when a deny entry covers it,
  // and, in a special range, unless an allow entry names it by address.
  Verdict CheckAddress(const IpAddress& addr, uint16_t port, const std::vector<IpAddress>& host_own) const;

 private:
  std::vector<NetworkRule> allow_, deny_;
};

}  // namespace lsb::egress
