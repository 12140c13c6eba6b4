// The Connect protocol (connectrpc.com/docs/protocol) with its JSON codec over HTTP/1.1, as the
// E2B SDKs speak it to envd: a unary call is a POST of `application/json` answered by one JSON
// message (or an error status with {"code","message"}); a server-streaming call is a POST of
// `application/connect+json` whose body is one enveloped message, answered 200 with enveloped
// messages and a last end-stream envelope carrying the error, if any. An envelope is 1 flag byte
// (0x01 compressed, 0x02 end of stream) and a 4-byte big-endian length. No compression is
// offered, so a compressed envelope is refused.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/http_types.h"

namespace lsb::server::e2b {

// The most bytes of one request message (an RPC's arguments: paths, a command line, its env).
inline constexpr size_t kMaxRpcMessageBytes = 1u << 20;

// Connect's error codes (the subset this front door answers).
enum class RpcCode {
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kPermissionDenied,
  kResourceExhausted,
  kFailedPrecondition,
  kUnauthenticated,
  kUnimplemented,
  kInternal,
  kUnavailable,
  kDeadlineExceeded,
};

struct RpcError {
  RpcCode code = RpcCode::kInternal;
  std::string message;
};

const char* RpcCodeName(RpcCode c);
int RpcHttpStatus(RpcCode c);
// An API error (the v1 vocabulary) in Connect's.
RpcError FromApiError(const ApiError& e);

// The request message of a unary (`streaming` false) or server-streaming call: the JSON object,
// or an error naming what is wrong with the body (type, envelope, size, JSON).
ApiOr<nlohmann::json> ParseRequest(const HttpRequest& req, bool streaming);

// One enveloped message (flag 0) and the end-stream envelope (flag 2; `error` null for success).
std::string Envelope(const nlohmann::json& message);
std::string EndStream(const RpcError* error);

// A unary answer: 200 with the message, or the error's status with {"code","message"}.
HttpResponse UnaryResponse(const nlohmann::json& message);
HttpResponse UnaryError(const RpcError& e);

}  // namespace lsb::server::e2b
