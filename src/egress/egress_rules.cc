#include "egress/egress_rules.h"

#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

namespace lsb::egress {
namespace {

struct Range {
  const char* cidr;
  const char* name;
};

// Every range a name must not lead to (RFC 6890 special-purpose registries, in short).
constexpr Range kSpecialRanges[] = {
    {"0.0.0.0/8", "unspecified"},        {"127.0.0.0/8", "loopback"},
    {"169.254.0.0/16", "link-local"},    {"10.0.0.0/8", "private"},
    {"172.16.0.0/12", "private"},        {"192.168.0.0/16", "private"},
    {"100.64.0.0/10", "carrier-grade NAT"}, {"192.0.0.0/24", "reserved"},
    {"192.0.2.0/24", "documentation"},   {"198.18.0.0/15", "benchmarking"},
    {"198.51.100.0/24", "documentation"}, {"203.0.113.0/24", "documentation"},
    {"224.0.0.0/4", "multicast"},        {"240.0.0.0/4", "reserved"},
    {"::/128", "unspecified"},           {"::1/128", "loopback"},
    {"fe80::/10", "link-local"},         {"fc00::/7", "private"},
    {"ff00::/8", "multicast"},           {"64:ff9b::/96", "NAT64"},
    {"2001:db8::/32", "documentation"},  {"100::/64", "discard"},
    {"::/96", "IPv4-compatible"},
};

const std::vector<NetworkRule>& SpecialRules() {
  static const std::vector<NetworkRule> rules = [] {
    std::vector<NetworkRule> out;
    for (const Range& r : kSpecialRanges) {
      auto rule = ParseNetworkRule(r.cidr);
      if (rule.ok()) {
        rule->text = r.name;
        out.push_back(*rule);
      }
    }
    return out;
  }();
  return rules;
}

const NetworkRule* FindName(const std::vector<NetworkRule>& rules, const std::string& host, uint16_t port) {
  for (const auto& r : rules)
    if (RuleMatchesName(r, host, port)) return &r;
  return nullptr;
}

const NetworkRule* FindAddress(const std::vector<NetworkRule>& rules, const IpAddress& a, uint16_t port) {
  for (const auto& r : rules)
    if (RuleCoversAddress(r, a, port)) return &r;
  return nullptr;
}

}  // namespace

std::string SpecialRange(const IpAddress& addr, const std::vector<IpAddress>& host_own) {
  for (const auto& r : SpecialRules())
    if (RuleCoversAddress(r, addr, 0)) return r.text;
  if (std::find(host_own.begin(), host_own.end(), addr) != host_own.end()) return "this host's own address";
  if (addr.family == AF_INET && addr.bytes[0] == 255 && addr.bytes[1] == 255 && addr.bytes[2] == 255 &&
      addr.bytes[3] == 255)
    return "broadcast";
  return "";
}

std::vector<IpAddress> HostAddresses() {
  std::vector<IpAddress> out;
  struct ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (auto* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr) continue;
    IpAddress a;
    if (i->ifa_addr->sa_family == AF_INET) {
      a.family = AF_INET;
      std::memcpy(a.bytes.data(), &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, 4);
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      a.family = AF_INET6;
      std::memcpy(a.bytes.data(), &reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr, 16);
    } else {
      continue;
    }
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  }
  ::freeifaddrs(list);
  return out;
}

Result<EgressRules> EgressRules::Parse(const std::vector<std::string>& allow, const std::vector<std::string>& deny) {
  EgressRules rules;
  for (const auto& [list, out] : {std::pair{&allow, &rules.allow_}, std::pair{&deny, &rules.deny_}})
    for (const auto& text : *list) {
      auto r = ParseNetworkRule(text);
      if (!r.ok()) return Error::InvalidArgument("network", "network entry '" + text + "': " + r.error().message);
      out->push_back(*r);
    }
  return rules;
}

Verdict EgressRules::CheckTarget(const std::string& host, uint16_t port) const {
  const std::string target = host + ":" + std::to_string(port);
  if (auto literal = ParseIpLiteral(host)) {
    if (auto* d = FindAddress(deny_, *literal, port)) return {false, target + " is denied by network.deny '" + d->text + "'"};
    if (FindAddress(allow_, *literal, port)) return {true, ""};
    return {false, target + ": an address is reachable only when network.allow names it (an address entry)"};
  }
  if (auto* d = FindName(deny_, host, port)) return {false, target + " is denied by network.deny '" + d->text + "'"};
  if (FindName(allow_, host, port)) return {true, ""};
  return {false, target + " is not in network.allow"};
}

Verdict EgressRules::CheckAddress(const IpAddress& addr, uint16_t port, const std::vector<IpAddress>& host_own) const {
  const std::string text = addr.ToString();
  if (auto* d = FindAddress(deny_, addr, port)) return {false, "its address " + text + " is denied by network.deny '" + d->text + "'"};
  std::string range = SpecialRange(addr, host_own);
  if (range.empty() || FindAddress(allow_, addr, port)) return {true, ""};
  return {false, "its address " + text + " is " + range +
                     ", reachable only when network.allow names that address (a name never makes it reachable)"};
}

}  // namespace lsb::egress
