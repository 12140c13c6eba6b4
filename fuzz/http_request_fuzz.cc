// libFuzzer target: the daemon's request handling up to the handlers, as http_server.cc does it:
// Beast's request parser with the daemon's limits, lower-cased headers, SplitTarget, the router
// with the daemon's route patterns, then the JSON body decoders of execute / session / batch
// requests and Base64Decode. Any input ends in a value or an ApiError, never a crash.
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>

#include "server/http_target.h"
#include "server/json_codec.h"
#include "server/router.h"

namespace {

namespace http = boost::beast::http;
using namespace lsb::server;

class NullStream : public ResponseStream {
 public:
  bool Begin(int, const std::string&) override { return false; }
  bool Write(std::string_view) override { return false; }
};

void DecodeBodies(const std::string& body) {
  auto j = ParseObject(body);
  if (!j.ok()) return;
  (void)ParseExecuteBody(*j, false);
  (void)ParseExecuteBody(*j, true);
  (void)ParseSessionBody(*j);
  if (j->contains("tasks") && (*j)["tasks"].is_array()) {
    int n = 0;
    for (const auto& t : (*j)["tasks"]) (void)ParseExecuteBody(t, false, "tasks[" + std::to_string(n++) + "].");
  }
}

const Router& Routes() {
  static Router* r = [] {
    auto* router = new Router;
    const char* routes[][2] = {
        {"POST", "/v1/execute"}, {"POST", "/v1/batch"}, {"GET", "/healthz"}, {"GET", "/readyz"},
        {"GET", "/v1/policies"}, {"GET", "/v1/policies/{name}"}, {"POST", "/v1/sessions"},
        {"GET", "/v1/sessions"}, {"GET", "/v1/sessions/{id}"}, {"DELETE", "/v1/sessions/{id}"},
        {"POST", "/v1/sessions/{id}/execute"}, {"PUT", "/v1/sessions/{id}/files"},
        {"GET", "/v1/sessions/{id}/files"}, {"GET", "/metrics"}, {"GET", "/v1/executions/{id}"}};
    for (auto& rt : routes)
      router->Add(rt[0], rt[1], [](HttpRequest& req, ResponseStream&) -> Reply {
        DecodeBodies(req.body);
        HttpResponse res;
        res.body = req.params.count("id") ? req.params["id"] : "";
        return res;
      });
    return router;
  }();
  return *r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  http::request_parser<http::string_body> parser;
  parser.header_limit(64 * 1024);
  parser.body_limit(1 << 20);
  parser.eager(true);
  boost::beast::error_code ec;
  size_t used = 0;
  while (used < size && !parser.is_done()) {
    size_t n = parser.put(boost::asio::buffer(data + used, size - used), ec);
    if (ec == http::error::need_more) break;
    if (ec) return 0;  // the daemon answers 400/413 and closes
    if (n == 0) break;
    used += n;
  }
  if (!parser.is_done()) {
    parser.put_eof(ec);
    if (ec || !parser.is_done()) return 0;
  }
  auto msg = parser.release();
  HttpRequest req;
  req.method = std::string(msg.method_string());
  req.target = std::string(msg.target());
  for (const auto& f : msg) {
    std::string name(f.name_string());
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    req.headers[name] = std::string(f.value());
  }
  req.body = std::move(msg.body());
  SplitTarget(req);
  NullStream out;
  Reply reply = Routes().Dispatch(req, out);
  if (!reply.streamed && (reply.response.status < 100 || reply.response.status > 599)) __builtin_trap();
  bool ok = false;
  (void)Base64Decode(req.body, &ok);
  return 0;
}
