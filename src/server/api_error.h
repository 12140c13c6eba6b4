// API errors and the ONE place that maps them to HTTP (docs/api.md): every non-2xx answer is
// {"error": {"code": "<snake_case>", "message": "..."}} with the status of its code.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "scheduler/executor.h"
#include "server/http_types.h"

namespace lsb::server {

enum class ApiCode {
  kBadRequest,            // 400
  kUnauthorized,          // 401 (+ WWW-Authenticate: Bearer)
  kForbidden,             // 403: a request that would loosen its policy
  kNotFound,              // 404
  kMethodNotAllowed,      // 405
  kRequestTimeout,        // 408: the request head or body arrived too slowly (http_server.cc)
  kConflict,              // 409: the session is busy
  kPayloadTooLarge,       // 413
  kUnsupportedMediaType,  // 415
  kTooManyRequests,       // 429 (+ Retry-After)
  kInternal,              // 500
  kNotImplemented,        // 501: the operation cannot be done here (the message names why)
  kSandboxError,          // 502: the sandbox itself failed
  kUnavailable,           // 503 (+ Retry-After)
};

struct ApiError {
  ApiCode code = ApiCode::kInternal;
  std::string message;
  int retry_after_s = 1;  // for 429 / 503
  nlohmann::json detail;  // an object whose members join "error" (a queue's position and length); null: none
};

int HttpStatus(ApiCode code);
const char* CodeName(ApiCode code);
nlohmann::json ErrorJson(const ApiError& e);
HttpResponse ErrorResponse(const ApiError& e);
// The answer when the executor did not take (or dropped) the work.
ApiError FromAdmission(sched::Admission a);
// The answer to a request whose limits TightenPolicy refused, by the error's kind: a value no box
// can run with (kInvalidArgument) is a 400, a raise of the policy a 403. The message starts with
// `where` and the request body's field for the error's policy key ("memory: resources.memory: ...").
ApiError FromTightening(const Error& e, const std::string& where);

inline ApiError BadRequest(std::string m) { return {ApiCode::kBadRequest, std::move(m)}; }
inline ApiError NotFound(std::string m) { return {ApiCode::kNotFound, std::move(m)}; }
inline ApiError SandboxError(std::string m) { return {ApiCode::kSandboxError, std::move(m)}; }

// A value or an ApiError.
template <typename T>
class ApiOr {
 public:
  ApiOr(T v) : v_(std::move(v)) {}          // NOLINT(google-explicit-constructor)
  ApiOr(ApiError e) : v_(std::move(e)) {}   // NOLINT(google-explicit-constructor)
  bool ok() const { return v_.index() == 0; }
  T& operator*() { return std::get<0>(v_); }
  T* operator->() { return &std::get<0>(v_); }
  const ApiError& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, ApiError> v_;
};

// A JSON response with `status`.
HttpResponse JsonResponse(int status, const nlohmann::json& body);

}  // namespace lsb::server
