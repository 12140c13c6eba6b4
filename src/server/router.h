// Method + path pattern -> handler. Patterns are literal segments and {name} placeholders
// ("/v1/sessions/{id}/files"); a placeholder matches one non-empty segment. A path that matches
// no pattern is 404; a path that matches with another method is 405.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "server/http_types.h"

namespace lsb::server {

class Router {
 public:
  using Handler = std::function<Reply(HttpRequest&, ResponseStream&)>;
  void Add(const std::string& method, const std::string& pattern, Handler h);
  Reply Dispatch(HttpRequest& req, ResponseStream& stream) const;

 private:
  struct Route {
    std::string method;
    std::vector<std::string> segments;
    Handler handler;
  };
  std::vector<Route> routes_;
};

}  // namespace lsb::server
