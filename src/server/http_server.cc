#include "server/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <chrono>
#include <functional>
#include <sstream>
#include <system_error>
#include <thread>

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "base/beast_sync_stream.h"
#include "server/api_error.h"
#include "server/http_target.h"

namespace lsb::server {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace net = boost::asio;

using Clock = std::chrono::steady_clock;

// A blocking socket as a Beast SyncReadStream/SyncWriteStream whose reads and writes fail with
// timed_out past a deadline. (Asio's own sync socket calls cannot time out, and a stuck client must
// not pin a thread forever.) The deadline is fixed, or for a body it moves with the bytes that
// arrived: start + floor + bytes / rate, so a body trickled slower than the rate is cut however
// long it claims to be.
class FdStream : public BeastSyncStream<FdStream> {
 public:
  explicit FdStream(int fd) : fd_(fd) {}
  void set_deadline(Clock::time_point t) {
    deadline_ = t;
    rate_ = 0;
  }
  void set_rate_deadline(Clock::time_point start, int floor_ms, uint64_t rate) {
    rate_start_ = start + std::chrono::milliseconds(floor_ms);
    rate_ = rate;
    rate_bytes_ = 0;
    deadline_ = rate_start_;
  }
  // A write of `bytes` starting now: the floor plus the time the rate allows for them.
  void set_write_deadline(int floor_ms, uint64_t rate, size_t bytes) {
    set_deadline(Clock::now() + std::chrono::milliseconds(floor_ms) + PerRate(bytes, rate));
  }
  // Called after every read that returned bytes (the connection's progress).
  void on_read(std::function<void()> f) { on_read_ = std::move(f); }
  // Waits until the peer sends something (or hangs up); false when `until` passed first.
  bool WaitReadable(Clock::time_point until) {
    auto saved = deadline_;
    deadline_ = until;
    beast::error_code ec;
    bool ok = Wait(POLLIN, ec);
    deadline_ = saved;
    return ok;
  }


  static std::chrono::milliseconds PerRate(uint64_t bytes, uint64_t rate) {
    if (rate == 0) return std::chrono::milliseconds(0);
    return std::chrono::milliseconds(bytes * 1000 / rate);
  }

 private:
  friend class BeastSyncStream<FdStream>;
  bool Wait(short events, beast::error_code& ec) {
    pollfd p{fd_, events, 0};
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
      if (left <= 0) {
        ec = net::error::timed_out;
        return false;
      }
      int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left + 1, 1 << 30)));
      if (r > 0) return true;
      if (r < 0 && errno != EINTR) {
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
        if (rate_ != 0) {
          rate_bytes_ += static_cast<uint64_t>(r);
          deadline_ = rate_start_ + PerRate(rate_bytes_, rate_);
        }
        if (on_read_) on_read_();
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
  Clock::time_point deadline_ = Clock::now();
  Clock::time_point rate_start_{};
  uint64_t rate_ = 0;
  uint64_t rate_bytes_ = 0;
  std::function<void()> on_read_;
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

// Writes one whole response under a write deadline sized for it (a client that does not read
// cannot hold the thread longer than that).
template <class Message>
void WriteWhole(FdStream& s, const HttpServerOptions& o, Message&& msg, beast::error_code& ec) {
  size_t bytes = 1024;  // the status line and headers, about
  if constexpr (requires { msg.body().size(); }) bytes += msg.body().size();
  s.set_write_deadline(o.write_timeout_ms, o.min_transfer_rate, bytes);
  http::write(s, msg, ec);
}

class BeastResponseStream : public ResponseStream {
 public:
  BeastResponseStream(FdStream& s, const HttpServerOptions& o, unsigned version) : s_(s), o_(o), version_(version) {}
  bool Begin(int status, const std::string& content_type) override {
    http::response<http::empty_body> res{static_cast<http::status>(status), version_};
    res.set(http::field::server, "llm-sandbox");
    res.set(http::field::content_type, content_type);
    res.set(http::field::cache_control, "no-cache");
    for (const auto& [k, v] : extra_headers_) res.set(k, v);
    res.keep_alive(false);
    res.chunked(true);
    http::response_serializer<http::empty_body> sr{res};
    beast::error_code ec;
    s_.set_write_deadline(o_.write_timeout_ms, o_.min_transfer_rate, 1024);
    http::write_header(s_, sr, ec);
    ok_ = !ec;
    begun_ = true;
    return ok_;
  }
  // Each chunk has its own deadline: a stream whose client stopped reading ends instead of blocking.
  bool Write(std::string_view chunk) override {
    if (!ok_ || chunk.empty()) return ok_;
    beast::error_code ec;
    s_.set_write_deadline(o_.write_timeout_ms, o_.min_transfer_rate, chunk.size() + 32);
    net::write(s_, http::make_chunk(net::const_buffer(chunk.data(), chunk.size())), ec);
    if (ec) ok_ = false;
    return ok_;
  }
  void End() {
    if (!ok_ || !begun_) return;
    beast::error_code ec;
    s_.set_write_deadline(o_.write_timeout_ms, o_.min_transfer_rate, 32);
    net::write(s_, http::make_chunk_last(), ec);
  }
  void AddHeader(std::string name, std::string value) override {
    extra_headers_.emplace_back(std::move(name), std::move(value));
  }

 private:
  FdStream& s_;
  const HttpServerOptions& o_;
  unsigned version_;
  bool ok_ = false;
  bool begun_ = false;
  std::vector<std::pair<std::string, std::string>> extra_headers_;
};

// The answer to a connection refused at accept: sent without blocking the acceptor (it fits in
// any socket buffer) and without reading the request.
void RefuseConnection(int fd, const std::string& why) {
  auto res = ToBeast(ErrorResponse({ApiCode::kUnavailable, why, 1}), 11, false);
  std::ostringstream out;
  out << res;
  std::string text = out.str();
  (void)::send(fd, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ::close(fd);
}

}  // namespace

namespace {

constexpr uint64_t kListenKey = 0;  // epoll key of the listening socket; connection ids start at 1
constexpr int kAcceptBatch = 64;    // accepts per wakeup, so waiting connections are seen in between
// The kernel caps it at net.core.somaxconn (4096 on current kernels). A SYN dropped by a full queue
// costs its client a 1 s retransmit, and accepting is cheap here, so the queue is as long as allowed.
constexpr int kListenBacklog = 4096;

bool Watch(int epoll_fd, int fd, uint64_t key, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = key;
  return ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) == 0;
}

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
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd.get(), kListenBacklog) != 0) {
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
  // The acceptor drains the queue without blocking and watches waiting connections beside it.
  s->epoll_fd_ = UniqueFd(::epoll_create1(EPOLL_CLOEXEC));
  int flags = ::fcntl(s->listen_fd_.get(), F_GETFL);
  if (!s->epoll_fd_ || flags < 0 || ::fcntl(s->listen_fd_.get(), F_SETFL, flags | O_NONBLOCK) != 0 ||
      !Watch(s->epoll_fd_.get(), s->listen_fd_.get(), kListenKey, EPOLLIN))
    return Error{std::string("cannot watch the listening socket: ") + std::strerror(errno)};
  return s;
}

HttpServer::~HttpServer() {
  StopAccepting();
  Stop(0);
}

// One thread accepts and holds every connection that has not sent a byte yet (waiting_room.h):
// only a connection with something to read gets its own thread, so connections that say nothing
// or leave at once cannot make the daemon spawn threads, nor keep a real client waiting behind
// them in the kernel's accept queue.
void HttpServer::Serve() {
  WaitingRoom room;
  epoll_event events[64];
  for (;;) {
    int n = ::epoll_wait(epoll_fd_.get(), events, 64, room.MsUntilNextDeadline(Clock::now()));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u64 == kListenKey) {
        if (!AcceptBatch(room)) {
          for (const auto& g : room.TakeAll()) CloseGuest(g);
          return;
        }
      } else if (auto g = room.Take(events[i].data.u64)) {
        ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, g->fd, nullptr);
        Greet(*g);
      }
    }
    // Nothing arrived within the head's deadline: closed without an answer, as a connection
    // thread does for a head that never began.
    for (const auto& g : room.TakeExpired(Clock::now())) CloseGuest(g);
  }
  for (const auto& g : room.TakeAll()) CloseGuest(g);
}

bool HttpServer::AcceptBatch(WaitingRoom& room) {
  for (int i = 0; i < kAcceptBatch; ++i) {
    sockaddr_storage peer{};
    socklen_t peer_len = sizeof peer;
    int fd = ::accept4(listen_fd_.get(), reinterpret_cast<sockaddr*>(&peer), &peer_len, SOCK_CLOEXEC);
    if (fd < 0) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!accepting_) return false;
      }
      if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let connections end
      return true;  // EAGAIN: the queue is empty
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto now = Clock::now();
    ConnectionTable::Admission admitted;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closing_) {
        admitted.why = "the daemon is shutting down";
      } else {
        admitted = table_.Admit(fd, PeerKey(peer), now, [](int conn_fd) {
          int unread = 0;
          return ::ioctl(conn_fd, FIONREAD, &unread) == 0 && unread > 0;
        });
        // Under the lock: the victim's owner closes its fd only under it, so this is its fd. A
        // victim still in the waiting room becomes readable and is closed when its event comes.
        if (admitted.evicted_fd >= 0) ::shutdown(admitted.evicted_fd, SHUT_RDWR);
      }
    }
    if (admitted.id == 0) {
      RefuseConnection(fd, admitted.why);
      continue;
    }
    WaitingRoom::Guest guest{admitted.id, fd, now, now + std::chrono::milliseconds(opts_.header_timeout_ms)};
    // A client that sent its request with the handshake (most do) goes to its thread at once.
    char byte;
    if (::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0) {
      Greet(guest);
    } else if (!Watch(epoll_fd_.get(), fd, admitted.id, EPOLLIN | EPOLLRDHUP)) {
      CloseGuest(guest);
    } else {
      room.Add(guest);
    }
  }
  return true;
}

void HttpServer::Greet(const WaitingRoom::Guest& g) {
  char byte;
  ssize_t r = ::recv(g.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  bool evicted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    evicted = table_.Evicted(g.id);
    // Bytes arrived: that is progress, so a full table's churn does not pick this connection
    // before its thread has read them.
    if (!evicted && r > 0) table_.Progress(g.id, ConnPhase::kReadingHead, Clock::now());
  }
  if (evicted || r <= 0) {  // evicted, hung up, or reset before saying anything
    CloseGuest(g);
    return;
  }
  try {
    std::thread([this, g] { ServeConnection(g.fd, g.id, g.accepted); }).detach();
  } catch (const std::system_error&) {  // no thread to be had (a flood): drop this one
    CloseGuest(g);
  }
}

void HttpServer::CloseGuest(const WaitingRoom::Guest& g) {
  std::lock_guard<std::mutex> lock(mu_);
  // Closed and forgotten under the lock: neither Stop() nor an eviction shuts down a reused fd number.
  ::close(g.fd);
  table_.Remove(g.id);
  gone_cv_.notify_all();
}

void HttpServer::StopAccepting() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!accepting_) return;
  accepting_ = false;
  // Wakes the blocked accept4() (it fails with EINVAL); the fd is closed by its owner later.
  if (listen_fd_) ::shutdown(listen_fd_.get(), SHUT_RDWR);
}

bool HttpServer::SetPhase(uint64_t id, ConnPhase phase) {
  std::lock_guard<std::mutex> lock(mu_);
  if (table_.Evicted(id)) return false;
  table_.Progress(id, phase, Clock::now());
  // A connection that is not answering anything while closing: cut it now.
  if (phase != ConnPhase::kBusy && closing_) return false;
  return true;
}

void HttpServer::Forget(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  table_.Remove(id);
  // Notified under the lock: once Stop() sees the table empty it may destroy the server.
  gone_cv_.notify_all();
}

void HttpServer::Stop(int grace_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  closing_ = true;
  for (int fd : table_.IdleFds()) ::shutdown(fd, SHUT_RDWR);
  gone_cv_.wait_for(lock, std::chrono::milliseconds(grace_ms), [this] { return table_.empty(); });
  for (int fd : table_.AllFds()) ::shutdown(fd, SHUT_RDWR);
  gone_cv_.wait(lock, [this] { return table_.empty(); });
  listen_fd_.reset();
}

size_t HttpServer::connections() const {
  std::lock_guard<std::mutex> lock(mu_);
  return table_.live();
}

size_t HttpServer::evictions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return table_.evictions();
}

void HttpServer::ServeConnection(int raw_fd, uint64_t id, Clock::time_point accepted) {
  UniqueFd fd(raw_fd);
  FdStream stream(fd.get());
  beast::flat_buffer buffer;
  auto too_large = [&] {
    beast::error_code ec;
    WriteWhole(stream, opts_,
               ToBeast(ErrorResponse({ApiCode::kPayloadTooLarge, "the request body is larger than the daemon's limit of " +
                                                                     std::to_string(opts_.max_body) + " bytes (--max-body)"}),
                       11, false),
               ec);
    LingeringClose(fd.get());
  };
  bool first = true;
  for (;;) {
    // The head's deadline runs from the connection's arrival, or on a kept-alive connection from
    // the first byte of the next request (until then the keep-alive timeout applies).
    Clock::time_point head_deadline;
    if (first) {
      head_deadline = accepted + std::chrono::milliseconds(opts_.header_timeout_ms);
    } else {
      if (buffer.size() == 0 &&
          !stream.WaitReadable(Clock::now() + std::chrono::milliseconds(opts_.keepalive_timeout_ms)))
        break;
      head_deadline = Clock::now() + std::chrono::milliseconds(opts_.header_timeout_ms);
    }
    first = false;
    if (!SetPhase(id, ConnPhase::kReadingHead)) break;
    stream.on_read([this, id] { SetPhase(id, ConnPhase::kReadingHead); });
    stream.set_deadline(head_deadline);
    http::request_parser<http::string_body> parser;
    parser.header_limit(64 * 1024);
    parser.body_limit(opts_.max_body);
    beast::error_code ec;
    http::read_header(stream, buffer, parser, ec);
    if (ec) {
      if (ec == http::error::body_limit) {
        too_large();
      } else if (ec == net::error::timed_out && buffer.size() > 0) {
        WriteWhole(stream, opts_,
                   ToBeast(ErrorResponse({ApiCode::kRequestTimeout,
                                          "the request head did not arrive within " +
                                              std::to_string(opts_.header_timeout_ms) + " ms (--header-timeout)"}),
                           11, false),
                   ec);
      } else if (ec != http::error::end_of_stream && ec != net::error::eof && ec != net::error::timed_out &&
                 buffer.size() > 0) {
        WriteWhole(stream, opts_, ToBeast(ErrorResponse(BadRequest("malformed HTTP request: " + ec.message())), 11, false), ec);
      }
      break;
    }
    if (!SetPhase(id, ConnPhase::kReadingBody)) break;
    stream.on_read([this, id] { SetPhase(id, ConnPhase::kReadingBody); });
    auto& head = parser.get();
    if (beast::iequals(head[http::field::expect], "100-continue")) {
      http::response<http::empty_body> cont{http::status::continue_, head.version()};
      WriteWhole(stream, opts_, cont, ec);
      if (ec) break;
    }
    stream.set_rate_deadline(Clock::now(), opts_.body_timeout_ms, opts_.min_transfer_rate);
    http::read(stream, buffer, parser, ec);
    stream.on_read(nullptr);
    if (ec) {
      if (ec == http::error::body_limit) {
        too_large();
      } else if (ec == net::error::timed_out) {
        WriteWhole(stream, opts_,
                   ToBeast(ErrorResponse({ApiCode::kRequestTimeout,
                                          "the request body arrived slower than " +
                                              std::to_string(opts_.min_transfer_rate) + " bytes/s after " +
                                              std::to_string(opts_.body_timeout_ms) +
                                              " ms (--body-timeout, --min-transfer-rate)"}),
                           11, false),
                   ec);
      } else if (ec != net::error::eof) {
        WriteWhole(stream, opts_, ToBeast(ErrorResponse(BadRequest("malformed HTTP request body: " + ec.message())), 11, false), ec);
      }
      break;
    }
    if (!SetPhase(id, ConnPhase::kBusy)) break;
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

    BeastResponseStream sse(stream, opts_, msg.version());
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
    WriteWhole(stream, opts_, ToBeast(reply.response, msg.version(), keep_alive), ec);
    if (ec || !keep_alive) break;
    if (!SetPhase(id, ConnPhase::kIdle)) break;
  }
  ::shutdown(fd.get(), SHUT_WR);
  std::lock_guard<std::mutex> lock(mu_);
  // Closed and forgotten under the lock: neither Stop() nor an eviction shuts down a reused fd number.
  fd.reset();
  table_.Remove(id);
  // Notified under the lock: once Stop() sees the table empty it may destroy the server.
  gone_cv_.notify_all();
}

}  // namespace lsb::server
