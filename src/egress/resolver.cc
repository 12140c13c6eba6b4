#include "egress/resolver.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

namespace lsb::egress {

Result<std::vector<IpAddress>> Resolver::Resolve(const std::string& host) const {
  if (auto literal = ParseIpLiteral(host)) return std::vector<IpAddress>{*literal};
  if (auto it = pins_.find(host); it != pins_.end()) return it->second;
  struct addrinfo hints {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo* list = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &list);
  if (rc != 0) return Error{ErrorCode::kNotFound, "cannot resolve " + host + ": " + ::gai_strerror(rc)};
  std::vector<IpAddress> out;
  for (auto* ai = list; ai && out.size() < 16; ai = ai->ai_next) {
    IpAddress a;
    if (ai->ai_family == AF_INET) {
      a.family = AF_INET;
      std::memcpy(a.bytes.data(), &reinterpret_cast<sockaddr_in*>(ai->ai_addr)->sin_addr, 4);
    } else if (ai->ai_family == AF_INET6) {
      // Through the literal parser, so an IPv4-mapped answer is checked as the IPv4 address.
      char buf[64] = {};
      auto* sin6 = reinterpret_cast<sockaddr_in6*>(ai->ai_addr);
      IpAddress raw;
      raw.family = AF_INET6;
      std::memcpy(raw.bytes.data(), &sin6->sin6_addr, 16);
      std::snprintf(buf, sizeof buf, "%s", raw.ToString().c_str());
      auto parsed = ParseIpLiteral(buf);
      if (!parsed) continue;
      a = *parsed;
    } else {
      continue;
    }
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  }
  ::freeaddrinfo(list);
  if (out.empty()) return Error{ErrorCode::kNotFound, "cannot resolve " + host + ": no address"};
  return out;
}

}  // namespace lsb::egress
