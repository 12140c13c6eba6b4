#include "server/e2b/connect_codec.h"

#include <cctype>

namespace lsb::server::e2b {
namespace {

using nlohmann::json;

std::string MediaType(const HttpRequest& req) {
  std::string t = req.Header("content-type");
  t = t.substr(0, t.find(';'));
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  size_t k = t.find_first_not_of(" \t");
  t = k == std::string::npos ? "" : t.substr(k);
  for (auto& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return t;
}

ApiOr<json> ParseMessage(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return BadRequest("the request message is not a JSON object");
  return j;
}

std::string Frame(unsigned char flag, const std::string& payload) {
  std::string out;
  out.reserve(5 + payload.size());
  out.push_back(static_cast<char>(flag));
  uint32_t n = static_cast<uint32_t>(payload.size());
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((n >> shift) & 0xff));
  out += payload;
  return out;
}

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

const char* RpcCodeName(RpcCode c) {
  switch (c) {
    case RpcCode::kInvalidArgument: return "invalid_argument";
    case RpcCode::kNotFound: return "not_found";
    case RpcCode::kAlreadyExists: return "already_exists";
    case RpcCode::kPermissionDenied: return "permission_denied";
    case RpcCode::kResourceExhausted: return "resource_exhausted";
    case RpcCode::kFailedPrecondition: return "failed_precondition";
    case RpcCode::kUnauthenticated: return "unauthenticated";
    case RpcCode::kUnimplemented: return "unimplemented";
    case RpcCode::kInternal: return "internal";
    case RpcCode::kUnavailable: return "unavailable";
    case RpcCode::kDeadlineExceeded: return "deadline_exceeded";
  }
  return "internal";
}

int RpcHttpStatus(RpcCode c) {
  switch (c) {
    case RpcCode::kInvalidArgument: return 400;
    case RpcCode::kFailedPrecondition: return 400;
    case RpcCode::kUnauthenticated: return 401;
    case RpcCode::kPermissionDenied: return 403;
    case RpcCode::kNotFound: return 404;
    case RpcCode::kAlreadyExists: return 409;
    case RpcCode::kResourceExhausted: return 429;
    case RpcCode::kUnimplemented: return 501;
    case RpcCode::kUnavailable: return 503;
    case RpcCode::kDeadlineExceeded: return 504;
    case RpcCode::kInternal: return 500;
  }
  return 500;
}

RpcError FromApiError(const ApiError& e) {
  switch (e.code) {
    case ApiCode::kBadRequest:
    case ApiCode::kUnsupportedMediaType: return {RpcCode::kInvalidArgument, e.message};
    case ApiCode::kUnauthorized: return {RpcCode::kUnauthenticated, e.message};
    case ApiCode::kForbidden: return {RpcCode::kPermissionDenied, e.message};
    case ApiCode::kNotFound: return {RpcCode::kNotFound, e.message};
    case ApiCode::kPayloadTooLarge:
    case ApiCode::kTooManyRequests: return {RpcCode::kResourceExhausted, e.message};
    case ApiCode::kConflict: return {RpcCode::kFailedPrecondition, e.message};
    case ApiCode::kUnavailable: return {RpcCode::kUnavailable, e.message};
    case ApiCode::kRequestTimeout: return {RpcCode::kDeadlineExceeded, e.message};
    default: return {RpcCode::kInternal, e.message};
  }
}

ApiOr<json> ParseRequest(const HttpRequest& req, bool streaming) {
  std::string type = MediaType(req);
  if (!streaming) {
    if (type != "application/json")
      return ApiError{ApiCode::kUnsupportedMediaType,
                      "this unary call takes Content-Type application/json (the Connect JSON codec), not '" + type + "'"};
    if (req.body.size() > kMaxRpcMessageBytes)
      return ApiError{ApiCode::kPayloadTooLarge, "the request message is larger than " +
                                                     std::to_string(kMaxRpcMessageBytes) + " bytes"};
    return ParseMessage(req.body.empty() ? std::string_view("{}") : std::string_view(req.body));
  }
  if (type != "application/connect+json")
    return ApiError{ApiCode::kUnsupportedMediaType,
                    "this streaming call takes Content-Type application/connect+json, not '" + type + "'"};
  const std::string& b = req.body;
  if (b.size() < 5) return BadRequest("the request body is not one Connect envelope (shorter than its 5-byte prefix)");
  unsigned char flag = static_cast<unsigned char>(b[0]);
  uint64_t n = 0;
  for (int i = 1; i <= 4; ++i) n = (n << 8) | static_cast<unsigned char>(b[i]);
  if (flag & 0x01) return BadRequest("the request envelope is compressed; this server offers no compression");
  if (flag != 0) return BadRequest("the request envelope has flags " + std::to_string(flag) + "; a request is one plain message");
  if (n > kMaxRpcMessageBytes)
    return ApiError{ApiCode::kPayloadTooLarge, "the request envelope declares " + std::to_string(n) +
                                                   " bytes; the most is " + std::to_string(kMaxRpcMessageBytes)};
  if (n != b.size() - 5)
    return BadRequest("the request envelope declares " + std::to_string(n) + " bytes but " +
                      std::to_string(b.size() - 5) + " follow (one message per call)");
  return ParseMessage(std::string_view(b).substr(5));
}

std::string Envelope(const json& message) { return Frame(0x00, Dump(message)); }

std::string EndStream(const RpcError* error) {
  json j = json::object();
  if (error) j["error"] = {{"code", RpcCodeName(error->code)}, {"message", error->message}};
  return Frame(0x02, Dump(j));
}

HttpResponse UnaryResponse(const json& message) {
  HttpResponse r;
  r.status = 200;
  r.content_type = "application/json";
  r.body = Dump(message);
  return r;
}

HttpResponse UnaryError(const RpcError& e) {
  HttpResponse r;
  r.status = RpcHttpStatus(e.code);
  r.content_type = "application/json";
  r.body = Dump(json{{"code", RpcCodeName(e.code)}, {"message", e.message}});
  return r;
}

}  // namespace lsb::server::e2b
