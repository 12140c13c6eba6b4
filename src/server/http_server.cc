#include "server/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <thread>

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "server/api_error.h"
#include "server/http_target.h"

namespace lsb::server {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace net = boost::asio;

// A blocking socket with poll() timeouts, as a Beast SyncReadStream/SyncWriteStream. (Asio's own
// sync socket calls cannot time out, and a stuck client must not pin a thread forever.)
class FdStream {
 public:
  FdStream(int fd, int timeout_ms) : fd_(fd), timeout_ms_(timeout_ms) {}
  void set_timeout(int ms) { timeout_ms_ = ms; }

  template <class MutableBufferSequence>
  size_t read_some(const MutableBufferSequence& buffers, beast::error_code& ec) {
    for (auto it = net::buffer_sequence_begin(buffers); it != net::buffer_sequence_end(buffers); ++it) {
      net::mutable_buffer b = *it;
      if (b.size() > 0) return Read(b.data(), b.size(), ec);
    }
    ec = {};
    return 0;
  }
  template <class MutableBufferSequence>
  size_t read_some(const MutableBufferSequence& buffers) {
    beast::error_code ec;
    size_t n = read_some(buffers, ec);
    if (ec) throw beast::system_error{ec};
    return n;
  }
  template <class ConstBufferSequence>
  size_t write_some(const ConstBufferSequence& buffers, beast::error_code& ec) {
    for (auto it = net::buffer_sequence_begin(buffers); it != net::buffer_sequence_end(buffers); ++it) {
      net::const_buffer b = *it;
      if (b.size() > 0) return Write(b.data(), b.size(), ec);
    }
    ec = {};
    return 0;
  }
  template <class ConstBufferSequence>
  size_t write_some(const ConstBufferSequence& buffers) {
    beast::error_code ec;
    size_t n = write_some(buffers, ec);
    if (ec) throw beast::system_error{ec};
    return n;
  }

 private:
  bool Wait(short events, beast::error_code& ec) {
    pollfd p{fd_, events, 0};
    for (;;) {
      int r = ::poll(&p, 1, timeout_ms_);
      if (r > 0) return true;
      if (r == 0) {
        ec = net::error::timed_out;
        return false;
      }
      if (errno != EINTR) {
        ec = beast::error_code(errno, boost::system::system_category());
        return false;
      }
    }
  }
  size_t Read(void* p, size_t n, beast::error_code& ec) {
    for (;;) {
      if (!Wait(POLLIN, ec)) return 0;
      ssize_t r = ::recv(fd_, p, n, 0);
      if (r > 0) {
        ec = {};
        return static_cast<size_t>(r);
      }
      if (r == 0) {
        ec = net::error::eof;
        return 0;
      }
      if (errno == EINTR || errno == EAGAIN) continue;
      ec = beast::error_code(errno, boost::system::system_category());
      return 0;
    }
  }
  size_t Write(const void* p, size_t n, beast::error_code& ec) {
    for (;;) {
      if (!Wait(POLLOUT, ec)) return 0;
      ssize_t r = ::send(fd_, p, n, MSG_NOSIGNAL);
      if (r >= 0) {
        ec = {};
        return static_cast<size_t>(r);
      }
      if (errno == EINTR || errno == EAGAIN) continue;
      ec = beast::error_code(errno, boost::system::system_category());
      return 0;
    }
  }
  int fd_;
  int timeout_ms_;
};

http::response<http::string_body> ToBeast(const HttpResponse& in, unsigned version, bool keep_alive) {
  http::response<http::string_body> res{static_cast<http::status>(in.status), version};
  res.set(http::field::server, "llm-sandbox");
  res.set(http::field::content_type, in.content_type);
  for (const auto& [k, v] : in.headers) res.set(k, v);
  res.body() = in.body;
  res.keep_alive(keep_alive);
  res.prepare_payload();
  return res;
}

// After an early error answer (413 before the body was read), read and drop what the client still
// sends for a moment, so it sees the answer rather than a connection reset.
void LingeringClose(int fd) {
  ::shutdown(fd, SHUT_WR);
  char buf[16384];
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  size_t total = 0;
  while (std::chrono::steady_clock::now() < until && total < (64u << 20)) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    total += static_cast<size_t>(n);
  }
}

class BeastResponseStream : public ResponseStream {
 public:
  BeastResponseStream(FdStream& s, unsigned version) : s_(s), version_(version) {}
  bool Begin(int status, const std::string& content_type) override {
    http::response<http::empty_body> res{static_cast<http::status>(status), version_};
    res.set(http::field::server, "llm-sandbox");
    res.set(http::field::content_type, content_type);
    res.set(http::field::cache_control, "no-cache");
    res.keep_alive(false);
    res.chunked(true);
    http::response_serializer<http::empty_body> sr{res};
    beast::error_code ec;
    http::write_header(s_, sr, ec);
    ok_ = !ec;
    begun_ = true;
    return ok_;
  }
  bool Write(std::string_view chunk) override {
    if (!ok_ || chunk.empty()) return ok_;
    beast::error_code ec;
    net::write(s_, http::make_chunk(net::const_buffer(chunk.data(), chunk.size())), ec);
    if (ec) ok_ = false;
    return ok_;
  }
  void End() {
    if (!ok_ || !begun_) return;
    beast::error_code ec;
    net::write(s_, http::make_chunk_last(), ec);
  }

 private:
  FdStream& s_;
  unsigned version_;
  bool ok_ = false;
  bool begun_ = false;
};

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::Listen(const HttpServerOptions& opts, HttpHandler handler) {
  std::unique_ptr<HttpServer> s(new HttpServer(opts, std::move(handler)));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string port = std::to_string(opts.port);
  int rc = ::getaddrinfo(opts.host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) return Error{"--listen " + opts.host + ":" + port + ": " + ::gai_strerror(rc)};
  std::string last = "no address";
  for (addrinfo* a = res; a; a = a->ai_next) {
    UniqueFd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd) {
      last = std::strerror(errno);
      continue;
    }
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd.get(), 1024) != 0) {
      last = std::strerror(errno);
      continue;
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len);
    s->port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                 : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    s->listen_fd_ = std::move(fd);
    break;
  }
  ::freeaddrinfo(res);
  if (!s->listen_fd_)
    return Error{"cannot listen on " + opts.host + ":" + port + ": " + last +
                 " (is another daemon running there? choose another --listen HOST:PORT)"};
  return s;
}

HttpServer::~HttpServer() {
  StopAccepting();
  Stop(0);
}

void HttpServer::Serve() {
  for (;;) {
    int fd = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!accepting_) return;
      }
      if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let connections end
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    uint64_t id = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closing_ || conns_.size() >= opts_.max_connections) {
        id = 0;
      } else {
        id = next_id_++;
        conns_[id] = Conn{fd, false};
      }
    }
    if (id == 0) {
      FdStream st(fd, 1000);
      beast::error_code ec;
      http::write(st, ToBeast(ErrorResponse({ApiCode::kUnavailable, "too many connections; retry later", 1}), 11, false), ec);
      ::close(fd);
      continue;
    }
    std::thread([this, fd, id] { ServeConnection(fd, id); }).detach();
  }
}

void HttpServer::StopAccepting() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!accepting_) return;
  accepting_ = false;
  // Wakes the blocked accept4() (it fails with EINVAL); the fd is closed by its owner later.
  if (listen_fd_) ::shutdown(listen_fd_.get(), SHUT_RDWR);
}

void HttpServer::SetBusy(uint64_t id, bool busy) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  it->second.busy = busy;
  // A connection that went idle while closing: cut it now.
  if (!busy && closing_) ::shutdown(it->second.fd, SHUT_RDWR);
}

void HttpServer::Stop(int grace_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  closing_ = true;
  for (auto& [_, c] : conns_)
    if (!c.busy) ::shutdown(c.fd, SHUT_RDWR);
  gone_cv_.wait_for(lock, std::chrono::milliseconds(grace_ms), [this] { return conns_.empty(); });
  for (auto& [_, c] : conns_) ::shutdown(c.fd, SHUT_RDWR);
  gone_cv_.wait(lock, [this] { return conns_.empty(); });
  listen_fd_.reset();
}

size_t HttpServer::connections() const {
  std::lock_guard<std::mutex> lock(mu_);
  return conns_.size();
}

void HttpServer::ServeConnection(int raw_fd, uint64_t id) {
  UniqueFd fd(raw_fd);
  FdStream stream(fd.get(), opts_.idle_timeout_ms);
  beast::flat_buffer buffer;
  for (;;) {
    stream.set_timeout(opts_.idle_timeout_ms);
    http::request_parser<http::string_body> parser;
    parser.header_limit(64 * 1024);
    parser.body_limit(opts_.max_body);
    beast::error_code ec;
    http::read_header(stream, buffer, parser, ec);
    if (ec) {
      if (ec == http::error::body_limit) {
        http::write(stream, ToBeast(ErrorResponse({ApiCode::kPayloadTooLarge,
                                                   "the request body is larger than the daemon's limit of " +
                                                       std::to_string(opts_.max_body) + " bytes (--max-body)"}),
                                    11, false), ec);
        LingeringClose(fd.get());
      } else if (ec != http::error::end_of_stream && ec != net::error::eof && ec != net::error::timed_out &&
                 buffer.size() > 0) {
        http::write(stream, ToBeast(ErrorResponse(BadRequest("malformed HTTP request: " + ec.message())), 11, false), ec);
      }
      break;
    }
    SetBusy(id, true);
    stream.set_timeout(opts_.io_timeout_ms);
    auto& head = parser.get();
    if (beast::iequals(head[http::field::expect], "100-continue")) {
      http::response<http::empty_body> cont{http::status::continue_, head.version()};
      http::write(stream, cont, ec);
      if (ec) break;
    }
    http::read(stream, buffer, parser, ec);
    if (ec) {
      if (ec == http::error::body_limit) {
        http::write(stream, ToBeast(ErrorResponse({ApiCode::kPayloadTooLarge,
                                                   "the request body is larger than the daemon's limit of " +
                                                       std::to_string(opts_.max_body) + " bytes (--max-body)"}),
                                    11, false), ec);
        LingeringClose(fd.get());
      } else if (ec != net::error::eof && ec != net::error::timed_out) {
        http::write(stream, ToBeast(ErrorResponse(BadRequest("malformed HTTP request body: " + ec.message())), 11, false), ec);
      }
      break;
    }
    auto msg = parser.release();
    HttpRequest req;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    for (const auto& f : msg) {
      std::string name(f.name_string());
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      req.headers[name] = std::string(f.value());
    }
    req.body = std::move(msg.body());
    SplitTarget(req);
    bool keep_alive = msg.keep_alive();

    BeastResponseStream sse(stream, msg.version());
    Reply reply;
    try {
      reply = handler_(req, sse);
    } catch (const std::exception& e) {
      reply = Reply(ErrorResponse({ApiCode::kInternal, std::string("internal error: ") + e.what()}));
    }
    if (reply.streamed) {
      sse.End();
      break;  // streamed responses end the connection
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closing_) keep_alive = false;
    }
    http::write(stream, ToBeast(reply.response, msg.version(), keep_alive), ec);
    SetBusy(id, false);
    if (ec || !keep_alive) break;
  }
  ::shutdown(fd.get(), SHUT_WR);
  std::lock_guard<std::mutex> lock(mu_);
  // Closed and forgotten under the lock: Stop() never shuts down a reused fd number.
  fd.reset();
  conns_.erase(id);
  // Notified under the lock: once Stop() sees the table empty it may destroy the server.
  gone_cv_.notify_all();
}

}  // namespace lsb::server
