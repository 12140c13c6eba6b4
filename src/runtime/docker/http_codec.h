// HTTP/1.1 as the Docker Engine API speaks it, without I/O: requests are encoded to bytes, responses
// are parsed incrementally from bytes (Content-Length, chunked, or until close), so the codec is
// unit-tested on its own and the client only moves bytes.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace lsb::docker {

struct HttpRequest {
  std::string method = "GET";
  std::string target;  // "/v1.41/containers/json?all=1"
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// Adds Host, Content-Length (when there is a body or the method sends one) and the given headers.
std::string EncodeRequest(const HttpRequest& req);

struct HttpResponse {
  int status = 0;
  std::string reason;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;                            // de-chunked
  std::string Header(const std::string& lower_name) const;
};

// Feed bytes as they arrive; done() once the response is complete. For a hijacked connection
// (101 Switching Protocols, or a 200 to an attach), stop after headers_done(): the bytes past the
// headers are the raw stream (TakeRest()).
class ResponseParser {
 public:
  // `head_only`: the response to a HEAD request has no body whatever its headers say.
  explicit ResponseParser(bool head_only = false) : head_only_(head_only) {}

  // Consumes bytes; returns an Error on a malformed response.
  Status Feed(std::string_view bytes);
  // The peer closed the connection: completes a read-until-close body, or is an error.
  Status FeedEof();

  bool headers_done() const { return state_ > State::kHeaders; }
  bool done() const { return state_ == State::kDone; }
  const HttpResponse& response() const { return resp_; }
  HttpResponse TakeResponse() { return std::move(resp_); }
  // Bytes received past the end of the headers and not consumed (after a hijack).
  std::string TakeRest();
  // Stop parsing after the headers: the rest is a raw stream.
  void StopAfterHeaders() { stop_after_headers_ = true; }
  // The answer was not an upgrade after all (an error to a hijack): parse its body as usual; the
  // bytes already received are parsed by the next Feed (which may be empty).
  void ResumeAfterHeaders() { stop_after_headers_ = false; }

 private:
  enum class State { kHeaders, kBody, kChunkSize, kChunkData, kChunkDataEnd, kTrailers, kUntilClose, kDone };
  Status ParseHead(std::string_view head);
  Status Step(bool* progressed);

  bool head_only_;
  bool stop_after_headers_ = false;
  State state_ = State::kHeaders;
  std::string buf_;
  size_t pos_ = 0;
  size_t remaining_ = 0;  // body or chunk bytes left
  HttpResponse resp_;
};

// Limits that keep a broken or hostile peer from eating memory.
inline constexpr size_t kMaxHeaderBytes = 64 * 1024;
inline constexpr size_t kMaxBodyBytes = 64 * 1024 * 1024;

// "%2F"-style escaping for a query value or path segment.
std::string UrlEncode(std::string_view s);

}  // namespace lsb::docker
