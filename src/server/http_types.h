// Plain HTTP request/response values between the transport (http_server.cc, the only file that
// knows Boost.Beast) and the routes. Header names are lower-case.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lsb::server {

struct HttpRequest {
  std::string method;                          // "GET", "POST", ...
  std::string target;                          // as sent: "/v1/execute?stream=true"
  std::string path;                            // percent-decoded, without the query
  std::map<std::string, std::string> query;    // percent-decoded
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::map<std::string, std::string> params;   // filled by the router: {id}, {name}
  // Who asked (daemon.cc, after the token check): "" when the daemon has no tokens (one user),
  // else the id of the bearer token ("tok-" + 16 hex digits of its SHA-256). Every object a
  // request creates belongs to it; another owner gets 404 (docs/security.md "Ownership").
  std::string owner;

  std::string Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
  std::string Query(const std::string& name) const {
    auto it = query.find(name);
    return it == query.end() ? std::string() : it->second;
  }
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // Kept until the answer is written, then dropped (a fan-out budget reservation, byte_budget.h).
  std::shared_ptr<void> hold;
};

// A response written in pieces (server-sent events): Begin() once, Write() per chunk.
class ResponseStream {
 public:
  virtual ~ResponseStream() = default;
  // Sends the status line and headers of a chunked response. False when the client is gone.
  virtual bool Begin(int status, const std::string& content_type) = 0;
  // Sends one chunk. False when the client is gone (further writes are dropped).
  virtual bool Write(std::string_view chunk) = 0;
  // A header for the streamed answer, before Begin() (the front door's CORS headers).
  virtual void AddHeader(std::string /*name*/, std::string /*value*/) {}
};

// What a route handler gives back: a whole response, or "streamed" when it used the stream.
struct Reply {
  bool streamed = false;
  HttpResponse response;
  static Reply Streamed() {
    Reply r;
    r.streamed = true;
    return r;
  }
  Reply() = default;
  Reply(HttpResponse r) : response(std::move(r)) {}  // NOLINT(google-explicit-constructor)
};

}  // namespace lsb::server
