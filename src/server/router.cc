#include "server/router.h"

#include <cctype>

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

// A JSON route refuses a body that is not declared application/json, and a POST/PUT/PATCH that
// declares another type even without a body (an empty cross-site form post still acts).
bool RefusedMediaType(const HttpRequest& req) {
  std::string ct = req.Header("content-type");
  bool writes = req.method == "POST" || req.method == "PUT" || req.method == "PATCH";
  if (req.body.empty() && (!writes || ct.empty())) return false;
  return !IsJsonContentType(ct);
}

}  // namespace

bool IsJsonContentType(const std::string& content_type) {
  std::string t = content_type.substr(0, content_type.find(';'));
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.pop_back();
  size_t k = t.find_first_not_of(" \t");
  t = k == std::string::npos ? "" : t.substr(k);
  for (auto& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return t == "application/json";
}

void Router::Add(const std::string& method, const std::string& pattern, Handler h, BodyKind body) {
  routes_.push_back(Route{method, pattern, Split(pattern), std::move(h), body});
}

const Router::Route* Router::Find(const HttpRequest& req, std::map<std::string, std::string>& params,
                                  const Route*& path_match, std::string& allowed) const {
  auto segs = Split(req.path);
  path_match = nullptr;
  for (const auto& r : routes_) {
    if (r.segments.size() != segs.size()) continue;
    params.clear();
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
    if (!path_match) path_match = &r;
    if (r.method != req.method && !(req.method == "HEAD" && r.method == "GET")) {
      allowed += (allowed.empty() ? "" : ", ") + r.method;
      continue;
    }
    return &r;
  }
  return nullptr;
}

std::string Router::PatternOf(const HttpRequest& req) const {
  std::map<std::string, std::string> params;
  const Route* path_match = nullptr;
  std::string allowed;
  const Route* r = Find(req, params, path_match, allowed);
  if (!r) r = path_match;
  return r ? r->pattern : std::string();
}

Reply Router::Dispatch(HttpRequest& req, ResponseStream& stream) const {
  std::map<std::string, std::string> params;
  const Route* path_match = nullptr;
  std::string allowed;
  if (const Route* found = Find(req, params, path_match, allowed)) {
    const Route& r = *found;
    if (r.body == BodyKind::kJson && RefusedMediaType(req)) {
      std::string ct = req.Header("content-type");
      return ErrorResponse({ApiCode::kUnsupportedMediaType,
                            (ct.empty() ? std::string("a body without a Content-Type header")
                                        : "Content-Type " + ct) +
                                " is not accepted on " + req.method + " " + req.path +
                                "; send the body as Content-Type: application/json"});
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
