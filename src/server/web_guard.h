// The front door's browser rules (docs/api.md "Browsers, Origin and Host"; docs/security.md
// class 7). A web page can make the user's browser send requests to a daemon on loopback; these
// rules keep such a page from acting on it or reading from it:
//  - Origin: a request that carries one is refused (403) unless it is a loopback origin or one the
//    operator allowed (--allow-origin). Only allowed origins get CORS headers (so only their pages
//    can read answers) and an answer to a preflight.
//  - Host: with no tokens configured, the Host header must name a loopback address or localhost
//    (403 otherwise), so a DNS-rebinding page (its name now pointing at 127.0.0.1) is refused.
//    With tokens, any Host is accepted: such a page has no token, and the daemon may be reached
//    by any name beyond loopback.
//  - Content-Type of JSON routes: router.h.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "server/api_error.h"
#include "server/http_types.h"

namespace lsb::server {

struct WebGuardConfig {
  bool tokens = false;                    // tokens configured: the Host rule is off
  std::set<std::string> allowed_origins;  // NormalizeOrigin()'d
};

// "scheme://host[:port]" in lower case without a trailing slash or default port; an error for
// anything else (a path, a query, userinfo, a scheme other than http/https).
Result<std::string> NormalizeOrigin(const std::string& origin);
// True when the origin's host is localhost, 127.0.0.0/8 or [::1].
bool IsLoopbackOrigin(const std::string& origin);
// True when a Host header value is localhost, 127.0.0.0/8 or [::1], with an optional port.
bool IsLoopbackHostHeader(const std::string& host);

class WebGuard {
 public:
  explicit WebGuard(WebGuardConfig config) : config_(std::move(config)) {}

  // The refusal for a request that breaks the Host or Origin rule; nullopt when it may go on.
  std::optional<ApiError> Check(const HttpRequest& req) const;
  // The CORS headers for the request's origin: only for an allowed origin (empty otherwise).
  std::vector<std::pair<std::string, std::string>> CorsHeaders(const HttpRequest& req) const;
  // A CORS preflight (OPTIONS with Access-Control-Request-Method) from an allowed origin: its 204
  // answer, without CorsHeaders() (the caller adds those to every answer). nullopt for any other
  // request (it goes on to the router, which answers 405).
  std::optional<HttpResponse> Preflight(const HttpRequest& req) const;

 private:
  bool Allowed(const std::string& origin) const;
  WebGuardConfig config_;
};

}  // namespace lsb::server
