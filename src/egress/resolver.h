// Names to addresses for the egress proxy: the operator's pins first (--egress-resolve), then the
// host's resolver (getaddrinfo). The box never resolves anything itself; the proxy checks every
// address returned and connects to the one it checked (no second lookup, so no rebinding window).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/result.h"
#include "policy/network_rules.h"

namespace lsb::egress {

class Resolver {
 public:
  explicit Resolver(std::map<std::string, std::vector<IpAddress>> pins) : pins_(std::move(pins)) {}
  // `host`: a normalized name or an address literal (returned as is). At most 16 addresses.
  Result<std::vector<IpAddress>> Resolve(const std::string& host) const;

 private:
  std::map<std::string, std::vector<IpAddress>> pins_;
};

}  // namespace lsb::egress
