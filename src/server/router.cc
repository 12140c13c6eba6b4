#include "server/router.h"

#include "server/api_error.h"

namespace lsb::server {
namespace {

std::vector<std::string> Split(const std::string& path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '/') {
      ++i;
      continue;
    }
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    out.push_back(path.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace

void Router::Add(const std::string& method, const std::string& pattern, Handler h) {
  routes_.push_back(Route{method, Split(pattern), std::move(h)});
}

Reply Router::Dispatch(HttpRequest& req, ResponseStream& stream) const {
  auto segs = Split(req.path);
  std::string allowed;
  for (const auto& r : routes_) {
    if (r.segments.size() != segs.size()) continue;
    std::map<std::string, std::string> params;
    bool match = true;
    for (size_t i = 0; i < segs.size() && match; ++i) {
      const std::string& p = r.segments[i];
      if (p.size() > 2 && p.front() == '{' && p.back() == '}') {
        params[p.substr(1, p.size() - 2)] = segs[i];
      } else if (p != segs[i]) {
        match = false;
      }
    }
    if (!match) continue;
    if (r.method != req.method && !(req.method == "HEAD" && r.method == "GET")) {
      allowed += (allowed.empty() ? "" : ", ") + r.method;
      continue;
    }
    req.params = std::move(params);
    return r.handler(req, stream);
  }
  if (!allowed.empty()) {
    HttpResponse res = ErrorResponse({ApiCode::kMethodNotAllowed, req.method + " is not allowed on " + req.path +
                                                                      "; use " + allowed});
    res.headers.emplace_back("Allow", allowed);
    return res;
  }
  return ErrorResponse(NotFound("no route " + req.method + " " + req.path + "; see docs/api.md"));
}

}  // namespace lsb::server
