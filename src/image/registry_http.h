// HTTP/1.1 to a registry over TCP, plain or TLS (OpenSSL), with every read and write bounded in
// time. Beast is the codec (as in src/server/http_server.cc); this file only moves bytes. A body
// is never held whole unless asked: blobs stream to a sink, capped at a byte limit the caller
// takes from the manifest, so a peer cannot make us read past what it declared.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace lsb::image::registry {

struct Url {
  std::string scheme;  // "https" or "http"
  std::string host;    // "registry-1.docker.io", "127.0.0.1", "::1" (no brackets)
  std::string port;    // "443", "5000"
  std::string target;  // "/v2/..." with query
  // "host:port" as Docker's certs.d names a registry (the port left out when it is the default).
  std::string HostPort() const;
  std::string Origin() const;  // "https://host:port"
  std::string ToString() const { return Origin() + target; }
};
// Parses an absolute http(s) URL; a relative `location` (a redirect) is resolved against `base`.
Result<Url> ParseUrl(std::string_view text);
Result<Url> ResolveUrl(const Url& base, std::string_view location);

// 127.0.0.0/8, ::1, "localhost": where Docker lets plain HTTP be used without asking.
bool IsLoopbackHost(std::string_view host);

struct TlsOptions {
  std::string ca_file;                            // extra CA bundle trusted for every registry
  std::string certs_dir = "/etc/docker/certs.d";  // <dir>/<host:port>/ca.crt, Docker's convention
};

struct Response {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-cased names; repeated ones joined by ", "
  std::vector<std::string> www_authenticate;   // each WWW-Authenticate header as sent
  std::string Header(const std::string& lower_name) const;
};

// Receives the de-chunked body in pieces; an error stops the read.
using BodySink = std::function<Status(const char* data, size_t n)>;

struct Request {
  std::string method = "GET";
  Url url;
  std::vector<std::pair<std::string, std::string>> headers;
};

// A client owned by one thread: it keeps one live connection per origin and reuses it.
class HttpClient {
 public:
  HttpClient(TlsOptions tls, std::chrono::milliseconds io_timeout);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends `req` and reads the response head; then exactly one of ReadBody/DiscardBody must follow
  // before the next Send. Errors are kUnavailable for transport failures (worth a retry) and
  // kPermissionDenied for a TLS peer that failed verification (never retried).
  Result<Response> Send(const Request& req);
  // Streams the body to `sink`; more than `limit` bytes is an error (kResourceExhausted) before
  // any byte past the limit is read.
  Status ReadBody(const BodySink& sink, uint64_t limit);
  Result<std::string> ReadBodyString(uint64_t limit);
  // Reads and drops a small body (an error page) so the connection can be reused; closes otherwise.
  void DiscardBody();

 private:
  struct Conn;
  Result<Conn*> ConnFor(const Url& url);
  Result<Response> SendOnce(const Request& req);
  TlsOptions tls_;
  std::chrono::milliseconds io_timeout_;
  std::map<std::string, std::unique_ptr<Conn>> conns_;
  Conn* active_ = nullptr;
};

}  // namespace lsb::image::registry
