#include "server/web_guard.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cctype>

namespace lsb::server {
namespace {

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool AllDigits(const std::string& s) {
  if (s.empty() || s.size() > 5) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// Splits "host[:port]" / "[v6][:port]" into the host (without brackets) and the port ("" if none).
// False when it is neither form.
bool SplitAuthority(const std::string& authority, std::string* host, std::string* port, bool* bracketed) {
  *bracketed = false;
  if (authority.empty()) return false;
  if (authority[0] == '[') {
    size_t e = authority.find(']');
    if (e == std::string::npos) return false;
    *host = authority.substr(1, e - 1);
    *bracketed = true;
    std::string rest = authority.substr(e + 1);
    if (rest.empty()) {
      port->clear();
      return true;
    }
    if (rest[0] != ':' || !AllDigits(rest.substr(1))) return false;
    *port = rest.substr(1);
    return true;
  }
  size_t colon = authority.find(':');
  if (colon != authority.rfind(':')) return false;  // a bare IPv6 address is not a Host
  *host = authority.substr(0, colon);
  *port = colon == std::string::npos ? "" : authority.substr(colon + 1);
  if (colon != std::string::npos && !AllDigits(*port)) return false;
  return !host->empty();
}

bool LoopbackName(const std::string& host, bool bracketed) {
  if (bracketed) {
    in6_addr a6{};
    return ::inet_pton(AF_INET6, host.c_str(), &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
  }
  std::string h = Lower(host);
  if (h == "localhost" || h == "localhost.") return true;
  in_addr a4{};
  return ::inet_pton(AF_INET, h.c_str(), &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
}

}  // namespace

Result<std::string> NormalizeOrigin(const std::string& origin) {
  std::string o = Lower(origin);
  std::string scheme;
  if (o.rfind("http://", 0) == 0) scheme = "http";
  else if (o.rfind("https://", 0) == 0) scheme = "https";
  else return Error{"origin '" + origin + "' must start with http:// or https://"};
  std::string authority = o.substr(scheme.size() + 3);
  if (!authority.empty() && authority.back() == '/') authority.pop_back();
  if (authority.find_first_of("/?#@ \t") != std::string::npos)
    return Error{"origin '" + origin + "' must be scheme://host[:port] only (no path, query or user)"};
  std::string host, port;
  bool bracketed = false;
  if (!SplitAuthority(authority, &host, &port, &bracketed)) return Error{"origin '" + origin + "': bad host[:port]"};
  if ((scheme == "http" && port == "80") || (scheme == "https" && port == "443")) port.clear();
  return scheme + "://" + (bracketed ? "[" + host + "]" : host) + (port.empty() ? "" : ":" + port);
}

bool IsLoopbackOrigin(const std::string& origin) {
  auto n = NormalizeOrigin(origin);
  if (!n.ok()) return false;
  std::string authority = n->substr(n->find("://") + 3);
  std::string host, port;
  bool bracketed = false;
  return SplitAuthority(authority, &host, &port, &bracketed) && LoopbackName(host, bracketed);
}

bool IsLoopbackHostHeader(const std::string& value) {
  std::string host, port;
  bool bracketed = false;
  return SplitAuthority(value, &host, &port, &bracketed) && LoopbackName(host, bracketed);
}

bool WebGuard::Allowed(const std::string& origin) const {
  auto n = NormalizeOrigin(origin);
  return n.ok() && config_.allowed_origins.count(*n) > 0;
}

std::optional<ApiError> WebGuard::Check(const HttpRequest& req) const {
  if (!config_.tokens) {
    auto host = req.headers.find("host");
    if (host == req.headers.end())
      return ApiError{ApiCode::kForbidden,
                      "a Host header naming a loopback address (localhost, 127.0.0.1, [::1]) is required: "
                      "the daemon runs without tokens"};
    if (!IsLoopbackHostHeader(host->second))
      return ApiError{ApiCode::kForbidden,
                      "Host " + host->second +
                          " is not a loopback address; without tokens the daemon answers only requests for "
                          "localhost, 127.0.0.0/8 or [::1] (a DNS-rebinding page is refused this way)"};
  }
  auto origin = req.headers.find("origin");
  if (origin != req.headers.end() && !IsLoopbackOrigin(origin->second) && !Allowed(origin->second))
    return ApiError{ApiCode::kForbidden, "Origin " + origin->second +
                                             " is not allowed: requests from web pages are accepted only from "
                                             "loopback origins or those given with --allow-origin"};
  return std::nullopt;
}

std::vector<std::pair<std::string, std::string>> WebGuard::CorsHeaders(const HttpRequest& req) const {
  std::string origin = req.Header("origin");
  if (origin.empty() || !Allowed(origin)) return {};
  return {{"Access-Control-Allow-Origin", origin},
          {"Vary", "Origin"},
          {"Access-Control-Expose-Headers", "Mcp-Session-Id, Retry-After, WWW-Authenticate"}};
}

std::optional<HttpResponse> WebGuard::Preflight(const HttpRequest& req) const {
  if (req.method != "OPTIONS" || req.Header("access-control-request-method").empty()) return std::nullopt;
  if (CorsHeaders(req).empty()) return std::nullopt;
  HttpResponse res;  // the front door adds CorsHeaders() to it, as to every answer
  res.status = 204;
  res.headers.emplace_back("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE");
  res.headers.emplace_back("Access-Control-Allow-Headers",
                           "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID");
  res.headers.emplace_back("Access-Control-Max-Age", "600");
  return res;
}

}  // namespace lsb::server
