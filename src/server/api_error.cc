#include "server/api_error.h"

namespace lsb::server {
namespace {

// The request body's name for the policy key a tightening refused ("resources.memory" -> "memory");
// "policy" for a key the body does not set.
std::string RequestFieldOf(const Error& e) {
  static constexpr std::pair<const char*, const char*> kBodyFields[] = {
      {"resources.timeout_grace", "timeout_grace"}, {"resources.timeout", "timeout"},
      {"resources.memory", "memory"},               {"resources.cpu", "cpu"},
      {"network.enabled", "network"},
  };
  for (const auto& [key, body_field] : kBodyFields)
    if (e.field == key) return body_field;
  return "policy";
}

}  // namespace

int HttpStatus(ApiCode code) {
  switch (code) {
    case ApiCode::kBadRequest: return 400;
    case ApiCode::kUnauthorized: return 401;
    case ApiCode::kForbidden: return 403;
    case ApiCode::kNotFound: return 404;
    case ApiCode::kMethodNotAllowed: return 405;
    case ApiCode::kRequestTimeout: return 408;
    case ApiCode::kConflict: return 409;
    case ApiCode::kPayloadTooLarge: return 413;
    case ApiCode::kUnsupportedMediaType: return 415;
    case ApiCode::kTooManyRequests: return 429;
    case ApiCode::kInternal: return 500;
    case ApiCode::kNotImplemented: return 501;
    case ApiCode::kSandboxError: return 502;
    case ApiCode::kUnavailable: return 503;
  }
  return 500;
}

const char* CodeName(ApiCode code) {
  switch (code) {
    case ApiCode::kBadRequest: return "bad_request";
    case ApiCode::kUnauthorized: return "unauthorized";
    case ApiCode::kForbidden: return "forbidden";
    case ApiCode::kNotFound: return "not_found";
    case ApiCode::kMethodNotAllowed: return "method_not_allowed";
    case ApiCode::kRequestTimeout: return "request_timeout";
    case ApiCode::kConflict: return "conflict";
    case ApiCode::kPayloadTooLarge: return "payload_too_large";
    case ApiCode::kUnsupportedMediaType: return "unsupported_media_type";
    case ApiCode::kTooManyRequests: return "too_many_requests";
    case ApiCode::kInternal: return "internal";
    case ApiCode::kNotImplemented: return "not_implemented";
    case ApiCode::kSandboxError: return "sandbox_error";
    case ApiCode::kUnavailable: return "unavailable";
  }
  return "internal";
}

nlohmann::json ErrorJson(const ApiError& e) {
  nlohmann::json err = {{"code", CodeName(e.code)}, {"message", e.message}};
  if (e.detail.is_object())
    for (const auto& [k, v] : e.detail.items()) err[k] = v;
  return {{"error", std::move(err)}};
}

HttpResponse JsonResponse(int status, const nlohmann::json& body) {
  HttpResponse r;
  r.status = status;
  r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

HttpResponse ErrorResponse(const ApiError& e) {
  HttpResponse r = JsonResponse(HttpStatus(e.code), ErrorJson(e));
  if (e.code == ApiCode::kUnauthorized) r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"llm-sandbox\"");
  if (e.code == ApiCode::kTooManyRequests || e.code == ApiCode::kUnavailable)
    r.headers.emplace_back("Retry-After", std::to_string(e.retry_after_s > 0 ? e.retry_after_s : 1));
  return r;
}

ApiError FromAdmission(sched::Admission a) {
  if (a == sched::Admission::kQueueFull)
    return {ApiCode::kTooManyRequests,
            "every worker is busy and the queue is full; retry after the Retry-After seconds", 1};
  return {ApiCode::kUnavailable, "the daemon is shutting down; retry against a running daemon", 5};
}

ApiError FromTightening(const Error& e, const std::string& where) {
  // Name the request's field first ("timeout: ..."), then the policy's words.
  std::string said = where + RequestFieldOf(e) + ": " + e.message;
  if (e.IsInvalidArgument()) return BadRequest(said);
  return {ApiCode::kForbidden, said + "; a request may only tighten its policy"};
}

}  // namespace lsb::server
