// The head of one request a program sends to the egress proxy (RFC 9112): a forward-proxy request
// in absolute form ("GET http://host/path HTTP/1.1") or a CONNECT ("CONNECT host:443 HTTP/1.1").
// Pure: bytes in, parsed head or an error saying what is wrong. The head is bounded by the caller
// (kMaxHeadBytes).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace lsb::egress {

inline constexpr size_t kMaxHeadBytes = 16 << 10;

struct RequestHead {
  std::string method;
  std::string target;
  std::string version;  // "HTTP/1.1" | "HTTP/1.0"
  std::vector<std::pair<std::string, std::string>> headers;  // as sent, in order
};

// Where a request goes, as the proxy checks it.
struct ProxyTarget {
  std::string host;   // a normalized name, or an address literal without brackets
  uint16_t port = 0;
  std::string path;   // origin form ("/simple/?q=1"); "" for CONNECT
};

// `head` ends with the blank line ("\r\n\r\n").
Result<RequestHead> ParseRequestHead(std::string_view head);
// "http://host[:port][/path]" (no userinfo, no https: a client speaks TLS through CONNECT).
Result<ProxyTarget> ParseAbsoluteTarget(std::string_view target);
// "host:port" or "[v6]:port".
Result<ProxyTarget> ParseConnectTarget(std::string_view target);
// The request head sent upstream: origin form, Host set to the checked target (so a forged Host
// cannot reach another site at the same address), hop-by-hop and Proxy-* headers dropped,
// "Connection: close" (one request per connection). `injected` (network.secrets) replaces any
// header of the same name the program sent. `default_port` is left out of Host (443 inside TLS).
std::string UpstreamHead(const RequestHead& head, const ProxyTarget& target,
                         const std::vector<std::pair<std::string, std::string>>& injected = {},
                         uint16_t default_port = 80);
// `path` without its query, for events (a query may carry tokens).
std::string PathForEvents(const std::string& path);

}  // namespace lsb::egress
