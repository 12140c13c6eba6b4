// Method + path pattern -> handler. Patterns are literal segments and {name} placeholders
// ("/v1/sessions/{id}/files"); a placeholder matches one non-empty segment. A path that matches
// no pattern is 404; a path that matches with another method is 405.
//
// A route's body is JSON unless it is registered as raw bytes (a file upload): a JSON route takes
// a request body only as `Content-Type: application/json` (415 otherwise, a missing type too), so
// no cross-site form or `text/plain` "simple request" a browser sends without asking can reach it.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "server/http_types.h"

namespace lsb::server {

enum class BodyKind { kJson, kRaw };

// True when `content_type` is application/json (any case, parameters such as charset allowed).
bool IsJsonContentType(const std::string& content_type);

class Router {
 public:
  using Handler = std::function<Reply(HttpRequest&, ResponseStream&)>;
  void Add(const std::string& method, const std::string& pattern, Handler h, BodyKind body = BodyKind::kJson);
  Reply Dispatch(HttpRequest& req, ResponseStream& stream) const;
  // The pattern of the route Dispatch picks for `req` ("/v1/sessions/{id}/execute"), or of the
  // first one matching its path when none has its method (405); "" when no pattern matches. The
  // HTTP metrics label by it: bounded by the routes, never a raw id or path.
  std::string PatternOf(const HttpRequest& req) const;

 private:
  struct Route {
    std::string method;
    std::string pattern;
    std::vector<std::string> segments;
    Handler handler;
    BodyKind body;
  };
  // The route for `req`'s method and path (nullptr when none); `path_match` gets the first route
  // matching the path alone, `allowed` the methods of those (the 405 answer).
  const Route* Find(const HttpRequest& req, std::map<std::string, std::string>& params, const Route*& path_match,
                    std::string& allowed) const;
  std::vector<Route> routes_;
};

}  // namespace lsb::server
