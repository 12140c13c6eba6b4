// The HTTP/1.1 transport of the daemon: Boost.Beast's parser and serializer over blocking sockets,
// one thread per connection (bounded), keep-alive, Expect: 100-continue, chunked request bodies
// decoded, limits on headers and body (413), and an idle timeout. Only http_server.cc includes
// Boost; routes see plain HttpRequest / HttpResponse values (http_types.h).
//
// Ownership and concurrency: the server owns the listening socket and every connection's socket;
// connection threads are detached but counted, and Stop() waits until all are gone. `mu_` guards
// the connection table and counters.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "server/http_types.h"

namespace lsb::server {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;            // 0 = any free port (tests); port() tells which
  uint64_t max_body = 10u << 20;   // bytes; larger bodies get 413
  size_t max_connections = 512;    // past it new connections get 503 and are closed
  int idle_timeout_ms = 60000;     // a connection silent this long is closed
  int io_timeout_ms = 60000;       // a single read/write that makes no progress this long fails
};

using HttpHandler = std::function<Reply(HttpRequest&, ResponseStream&)>;

class HttpServer {
 public:
  static Result<std::unique_ptr<HttpServer>> Listen(const HttpServerOptions& opts, HttpHandler handler);
  ~HttpServer();

  uint16_t port() const { return port_; }
  // Accepts connections until StopAccepting(); each is served on its own thread.
  void Serve();
  // Closes the listening socket: Serve() returns, new connections are refused by the kernel.
  void StopAccepting();
  // Ends every connection: idle ones now, busy ones after their current response (waiting at
  // most `grace_ms`, then cut). Returns when no connection thread is left.
  void Stop(int grace_ms);
  size_t connections() const;

 private:
  HttpServer(HttpServerOptions opts, HttpHandler handler) : opts_(std::move(opts)), handler_(std::move(handler)) {}
  void ServeConnection(int fd, uint64_t id);
  void SetBusy(uint64_t id, bool busy);

  HttpServerOptions opts_;
  HttpHandler handler_;
  UniqueFd listen_fd_;
  uint16_t port_ = 0;

  mutable std::mutex mu_;
  std::condition_variable gone_cv_;  // a connection thread ended
  struct Conn {
    int fd;
    bool busy;
  };
  std::map<uint64_t, Conn> conns_;
  uint64_t next_id_ = 1;
  bool closing_ = false;
  bool accepting_ = true;
};

}  // namespace lsb::server
