#include "policy/network_rules.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace lsb {
namespace {

// Whether the first `prefix` bits of a and b agree.
bool SamePrefix(const IpAddress& a, const IpAddress& b, int prefix) {
  if (a.family != b.family) return false;
  int full = prefix / 8, rest = prefix % 8;
  if (std::memcmp(a.bytes.data(), b.bytes.data(), static_cast<size_t>(full)) != 0) return false;
  if (rest == 0) return true;
  uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (a.bytes[full] & mask) == (b.bytes[full] & mask);
}

void ClearHostBits(IpAddress& a, int prefix) {
  int len = a.family == AF_INET ? 4 : 16;
  for (int i = 0; i < len; ++i) {
    int keep = std::clamp(prefix - 8 * i, 0, 8);
    a.bytes[i] &= static_cast<uint8_t>(keep == 0 ? 0 : 0xff << (8 - keep));
  }
}

Result<uint16_t> ParsePort(std::string_view text) {
  if (text.empty() || text.size() > 5 || text.find_first_not_of("0123456789") != std::string_view::npos)
    return Error{"the port '" + std::string(text) + "' is not a number from 1 to 65535"};
  unsigned long v = std::stoul(std::string(text));
  if (v == 0 || v > 65535) return Error{"the port '" + std::string(text) + "' is not a number from 1 to 65535"};
  return static_cast<uint16_t>(v);
}

// "host", "host:port", "[v6]", "[v6]:port", "v6" (several colons, no port) -> host part, port part.
void SplitHostPort(std::string_view text, std::string_view* host, std::string_view* port) {
  *port = {};
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos) {
      *host = text;  // left for the host check to refuse
      return;
    }
    std::string_view rest = text.substr(close + 1);
    size_t colon = rest.find(':');
    *host = text.substr(0, close + 1 + (colon == std::string_view::npos ? rest.size() : colon));
    if (colon != std::string_view::npos) *port = colon + 1 < rest.size() ? rest.substr(colon + 1) : ":";
    return;
  }
  size_t colon = text.rfind(':');
  if (colon != std::string_view::npos && text.find(':') == colon) {
    *host = text.substr(0, colon);
    *port = text.substr(colon + 1);
    if (port->empty()) *port = ":";  // "host:" is a mistake, not "every port"
    return;
  }
  *host = text;
}

}  // namespace

std::string IpAddress::ToString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(family, bytes.data(), buf, sizeof buf);
  return buf;
}

std::optional<IpAddress> ParseIpLiteral(std::string_view text) {
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') text = text.substr(1, text.size() - 2);
  if (text.empty() || text.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  std::string s(text);
  IpAddress a;
  if (::inet_pton(AF_INET, s.c_str(), a.bytes.data()) == 1) {
    a.family = AF_INET;
    return a;
  }
  if (::inet_pton(AF_INET6, s.c_str(), a.bytes.data()) == 1) {
    static const uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(a.bytes.data(), kMapped, 12) == 0) {
      IpAddress v4;
      v4.family = AF_INET;
      std::memcpy(v4.bytes.data(), a.bytes.data() + 12, 4);
      return v4;
    }
    a.family = AF_INET6;
    return a;
  }
  return std::nullopt;
}

Result<std::string> NormalizeHostName(std::string_view name) {
  std::string n(name);
  if (!n.empty() && n.back() == '.') n.pop_back();
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (n.empty()) return Error{"the name is empty"};
  if (n.size() > 253) return Error{"the name is longer than 253 characters"};
  size_t start = 0;
  while (start <= n.size()) {
    size_t dot = n.find('.', start);
    if (dot == std::string::npos) dot = n.size();
    std::string_view label(n.data() + start, dot - start);
    if (label.empty() || label.size() > 63)
      return Error{"'" + n + "' has an empty label or one longer than 63 characters"};
    for (unsigned char c : label)
      if (!std::isalnum(c) && c != '-' && c != '_')
        return Error{"'" + n + "' contains '" + std::string(1, static_cast<char>(c)) +
                     "'; a name has letters, digits, '-' and '.' only"};
    if (label.front() == '-' || label.back() == '-') return Error{"'" + n + "' has a label that starts or ends with '-'"};
    start = dot + 1;
  }
  return n;
}

Result<NetworkRule> ParseNetworkRule(std::string_view text) {
  NetworkRule r;
  r.text = std::string(text);
  if (text.empty()) return Error{"the entry is empty"};
  std::string_view host, port;
  // A CIDR's '/' comes before any port: "10.0.0.0/8:443", "[2001:db8::]/32:443".
  SplitHostPort(text, &host, &port);
  if (!port.empty()) {
    auto p = ParsePort(port == ":" ? std::string_view() : port);
    if (!p.ok()) return p.error();
    r.port = *p;
  }
  std::string_view addr_part = host;
  std::optional<int> prefix;
  if (size_t slash = host.find('/'); slash != std::string_view::npos) {
    addr_part = host.substr(0, slash);
    std::string_view bits = host.substr(slash + 1);
    if (bits.empty() || bits.size() > 3 || bits.find_first_not_of("0123456789") != std::string_view::npos)
      return Error{"'" + std::string(host) + "': the prefix length after '/' is not a number"};
    prefix = std::stoi(std::string(bits));
  }
  if (auto a = ParseIpLiteral(addr_part)) {
    int max = a->family == AF_INET ? 32 : 128;
    r.prefix = prefix.value_or(max);
    if (r.prefix < 0 || r.prefix > max)
      return Error{"'" + std::string(host) + "': the prefix length must be 0 to " + std::to_string(max)};
    r.kind = NetworkRule::Kind::kAddress;
    r.address = *a;
    ClearHostBits(r.address, r.prefix);
    return r;
  }
  if (prefix) return Error{"'" + std::string(host) + "' is not an address range (write 10.0.0.0/8 or [2001:db8::]/32)"};
  if (host == "*") {
    r.kind = NetworkRule::Kind::kAnyName;
    return r;
  }
  std::string_view name = host;
  if (name.substr(0, 2) == "*.") {
    r.kind = NetworkRule::Kind::kWildcard;
    name.remove_prefix(2);
  }
  if (name.find('*') != std::string_view::npos)
    return Error{"'" + std::string(host) + "': a wildcard is only '*' alone or a leading '*.' (as in *.github.com)"};
  auto n = NormalizeHostName(name);
  if (!n.ok()) return n.error();
  r.name = std::move(*n);
  return r;
}

bool RuleMatchesName(const NetworkRule& rule, std::string_view host, uint16_t port) {
  if (rule.port != 0 && rule.port != port) return false;
  switch (rule.kind) {
    case NetworkRule::Kind::kAnyName: return true;
    case NetworkRule::Kind::kName: return host == rule.name;
    case NetworkRule::Kind::kWildcard:
      // "*.x" matches "a.x" and "a.b.x", never "x" itself nor "evilx".
      return host.size() > rule.name.size() + 1 && host.ends_with(rule.name) &&
             host[host.size() - rule.name.size() - 1] == '.';
    case NetworkRule::Kind::kAddress: return false;
  }
  return false;
}

bool RuleCoversAddress(const NetworkRule& rule, const IpAddress& addr, uint16_t port) {
  if (rule.kind != NetworkRule::Kind::kAddress) return false;
  if (rule.port != 0 && rule.port != port) return false;
  return SamePrefix(rule.address, addr, rule.prefix);
}

bool RuleCovers(const NetworkRule& wide, const NetworkRule& narrow) {
  if (wide.port != 0 && wide.port != narrow.port) return false;
  using K = NetworkRule::Kind;
  switch (wide.kind) {
    case K::kAnyName: return narrow.kind != K::kAddress;
    case K::kName: return narrow.kind == K::kName && narrow.name == wide.name;
    case K::kWildcard:
      if (narrow.kind == K::kName) return RuleMatchesName(wide, narrow.name, narrow.port);
      if (narrow.kind == K::kWildcard)
        return narrow.name == wide.name || RuleMatchesName(wide, narrow.name, narrow.port);
      return false;
    case K::kAddress:
      return narrow.kind == K::kAddress && narrow.prefix >= wide.prefix &&
             SamePrefix(wide.address, narrow.address, wide.prefix);
  }
  return false;
}

Result<std::vector<std::string>> SecretVariables(std::string_view value) {
  std::vector<std::string> names;
  for (size_t i = 0; i < value.size(); ++i) {
    if (value[i] != '$') continue;
    if (i + 1 < value.size() && value[i + 1] == '$') {
      ++i;
      continue;
    }
    size_t close = value.find('}', i);
    if (i + 1 >= value.size() || value[i + 1] != '{' || close == std::string_view::npos)
      return Error{"a '$' must start ${NAME} (a variable of the daemon's environment) or be written $$"};
    std::string_view name = value.substr(i + 2, close - i - 2);
    bool ok = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
              std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
    if (!ok) return Error{"'${" + std::string(name) + "}' is not a variable name (letters, digits and '_')"};
    names.emplace_back(name);
    i = close;
  }
  return names;
}

}  // namespace lsb
