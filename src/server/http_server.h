// The HTTP/1.1 transport of the daemon: Boost.Beast's parser and serializer over blocking sockets,
// a thread per connection that has sent something (bounded), keep-alive, Expect: 100-continue, chunked request bodies
// decoded, limits on headers and body (413). Only http_server.cc includes Boost; routes see plain
// HttpRequest / HttpResponse values (http_types.h). A connection gets its thread when its first
// bytes arrive; until then it waits in the acceptor's epoll set (waiting_room.h), so connections
// that say nothing or leave at once cost an fd and a table slot each, never a thread.
//
// A slow client cannot hold a slot for long (docs/api.md "Connection limits"): the request head has
// a deadline, the body and every response write a deadline that grows with its size (a floor plus
// bytes / --min-transfer-rate), an idle keep-alive connection is closed, a peer holds at most its
// share of the table, and a full table evicts its most stalled idle or half-read connection
// (connection_table.h) instead of refusing the newcomer.
//
// Ownership and concurrency: the server owns the listening socket and every connection's socket;
// connection threads are detached but counted, and Stop() waits until all are gone. `mu_` guards
// the connection table and the flags.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "server/connection_table.h"
#include "server/http_types.h"
#include "server/waiting_room.h"

namespace lsb::server {

// The defaults are documented in docs/api.md ("Connection limits") and `serve --help`.
struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;                // 0 = any free port (tests); port() tells which
  uint64_t max_body = 10u << 20;       // bytes; larger bodies get 413
  ConnLimits connections;              // table size and per-peer share (evict, then 503)
  int header_timeout_ms = 10000;       // the whole request head must arrive within this
  int body_timeout_ms = 10000;         // the body gets this plus its bytes / min_transfer_rate
  int write_timeout_ms = 10000;        // each response write gets this plus its bytes / min_transfer_rate
  int keepalive_timeout_ms = 30000;    // a keep-alive connection with no new request is closed after this
  uint64_t min_transfer_rate = 64u << 10;  // bytes per second, on average, past the floors above
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
  size_t evictions() const;

 private:
  HttpServer(HttpServerOptions opts, HttpHandler handler)
      : opts_(std::move(opts)), handler_(std::move(handler)), table_(opts_.connections) {}
  // Accepts what the kernel's queue holds (up to a batch) into the waiting room; false once
  // StopAccepting() was called.
  bool AcceptBatch(WaitingRoom& room);
  // A waiting connection became readable: its own thread when it sent bytes, else closed.
  void Greet(const WaitingRoom::Guest& g);
  void CloseGuest(const WaitingRoom::Guest& g);
  void ServeConnection(int fd, uint64_t id, ConnectionTable::Clock::time_point accepted);
  // Records the connection's phase and progress; false when it was evicted (it should end).
  bool SetPhase(uint64_t id, ConnPhase phase);
  void Forget(uint64_t id);

  HttpServerOptions opts_;
  HttpHandler handler_;
  UniqueFd listen_fd_;
  UniqueFd epoll_fd_;  // the listening socket and the waiting room's connections
  uint16_t port_ = 0;

  mutable std::mutex mu_;
  std::condition_variable gone_cv_;  // a connection thread ended
  ConnectionTable table_{ConnLimits{}};
  bool closing_ = false;
  bool accepting_ = true;
};

}  // namespace lsb::server
