#include "image/registry_http.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "base/beast_sync_stream.h"
#include "base/unique_fd.h"

namespace lsb::image::registry {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace net = boost::asio;
using Clock = std::chrono::steady_clock;

constexpr size_t kReadBufferBytes = 256 * 1024;

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool IsIpLiteral(const std::string& host) {
  in6_addr a6;
  in_addr a4;
  return inet_pton(AF_INET, host.c_str(), &a4) == 1 || inet_pton(AF_INET6, host.c_str(), &a6) == 1;
}

std::string OpenSslErrors() {
  std::string out;
  unsigned long e;
  while ((e = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "no detail" : out;
}

struct SslCtxFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
struct SslFree {
  void operator()(SSL* s) const { SSL_free(s); }
};

// A Beast body that hands each piece to the caller's sink instead of storing it.
struct SinkBody {
  struct value_type {
    const BodySink* sink = nullptr;
    std::optional<Error> error;  // what the sink refused with
  };
  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(http::header<isRequest, Fields>&, value_type& body) : body_(body) {}
    void init(const boost::optional<std::uint64_t>&, beast::error_code& ec) { ec = {}; }
    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, beast::error_code& ec) {
      size_t n = 0;
      for (auto it = net::buffer_sequence_begin(buffers); it != net::buffer_sequence_end(buffers); ++it) {
        net::const_buffer b = *it;
        if (body_.sink != nullptr) {
          auto st = (*body_.sink)(static_cast<const char*>(b.data()), b.size());
          if (!st.ok()) {
            body_.error = st.error();
            ec = net::error::operation_aborted;
            return n;
          }
        }
        n += b.size();
      }
      ec = {};
      return n;
    }
    void finish(beast::error_code& ec) { ec = {}; }

   private:
    value_type& body_;
  };
};

}  // namespace

// One TCP (+TLS) connection as a Beast sync stream; every wait is bounded by the I/O timeout.
struct HttpClient::Conn : BeastSyncStream<HttpClient::Conn> {
  UniqueFd fd;
  std::unique_ptr<SSL_CTX, SslCtxFree> ctx;
  std::unique_ptr<SSL, SslFree> ssl;
  std::chrono::milliseconds timeout{30000};
  std::string where;  // "host:port" for messages
  std::string io_error;
  bool dead = false;
  beast::flat_buffer buffer;
  std::optional<http::response_parser<SinkBody>> parser;
  bool head_only = false;

  bool Wait(short events, beast::error_code& ec) {
    pollfd p{fd.get(), events, 0};
    auto deadline = Clock::now() + timeout;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        io_error = "no answer from " + where + " within " + std::to_string(timeout.count()) + " ms";
        ec = net::error::timed_out;
        return false;
      }
      int r = ::poll(&p, 1, static_cast<int>(left));
      if (r > 0) return true;
      if (r < 0 && errno != EINTR) {
        ec = beast::error_code(errno, boost::system::system_category());
        return false;
      }
    }
  }

  // For TLS: waits for what OpenSSL asked for; false (with ec) on a real failure.
  bool SslRetry(int r, beast::error_code& ec) {
    int e = SSL_get_error(ssl.get(), r);
    if (e == SSL_ERROR_WANT_READ) return Wait(POLLIN, ec);
    if (e == SSL_ERROR_WANT_WRITE) return Wait(POLLOUT, ec);
    if (e == SSL_ERROR_ZERO_RETURN) {
      ec = net::error::eof;
      return false;
    }
    io_error = "TLS error with " + where + ": " + OpenSslErrors();
    ec = net::error::connection_reset;
    return false;
  }

  size_t Read(void* p, size_t n, beast::error_code& ec) {
    for (;;) {
      if (ssl) {
        int r = SSL_read(ssl.get(), p, static_cast<int>(std::min<size_t>(n, 1 << 30)));
        if (r > 0) {
          ec = {};
          return static_cast<size_t>(r);
        }
        if (!SslRetry(r, ec)) return 0;
        continue;
      }
      ssize_t r = ::recv(fd.get(), p, n, 0);
      if (r > 0) {
        ec = {};
        return static_cast<size_t>(r);
      }
      if (r == 0) {
        ec = net::error::eof;
        return 0;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        io_error = std::string("read from ") + where + ": " + std::strerror(errno);
        ec = beast::error_code(errno, boost::system::system_category());
        return 0;
      }
      if (!Wait(POLLIN, ec)) return 0;
    }
  }

  size_t Write(const void* p, size_t n, beast::error_code& ec) {
    for (;;) {
      if (ssl) {
        int r = SSL_write(ssl.get(), p, static_cast<int>(std::min<size_t>(n, 1 << 30)));
        if (r > 0) {
          ec = {};
          return static_cast<size_t>(r);
        }
        if (!SslRetry(r, ec)) return 0;
        continue;
      }
      ssize_t r = ::send(fd.get(), p, n, MSG_NOSIGNAL);
      if (r >= 0) {
        ec = {};
        return static_cast<size_t>(r);
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        io_error = std::string("write to ") + where + ": " + std::strerror(errno);
        ec = beast::error_code(errno, boost::system::system_category());
        return 0;
      }
      if (!Wait(POLLOUT, ec)) return 0;
    }
  }


  Error Failure(const std::string& what, const beast::error_code& ec) {
    dead = true;
    std::string detail = io_error.empty() ? ec.message() : io_error;
    io_error.clear();
    return Error{ErrorCode::kUnavailable, what + " " + where + ": " + detail};
  }
};

std::string Url::HostPort() const {
  bool default_port = (scheme == "https" && port == "443") || (scheme == "http" && port == "80");
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return default_port ? h : h + ":" + port;
}

std::string Url::Origin() const { return scheme + "://" + HostPort(); }

Result<Url> ParseUrl(std::string_view text) {
  Url u;
  auto sep = text.find("://");
  if (sep == std::string_view::npos) return Error::InvalidArgument("url", "not an absolute URL: " + std::string(text));
  u.scheme = Lower(text.substr(0, sep));
  if (u.scheme != "http" && u.scheme != "https")
    return Error::InvalidArgument("url", "only http and https URLs are followed, not " + std::string(text));
  std::string_view rest = text.substr(sep + 3);
  auto slash = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, slash);
  u.target = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (!u.target.empty() && u.target[0] == '?') u.target = "/" + u.target;
  if (authority.find('@') != std::string_view::npos)
    return Error::InvalidArgument("url", "URLs with user info are refused: " + std::string(text));
  std::string_view hostpart = authority;
  std::string_view port;
  if (!authority.empty() && authority[0] == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) return Error::InvalidArgument("url", "bad IPv6 host in " + std::string(text));
    hostpart = authority.substr(1, close - 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':') port = authority.substr(close + 2);
  } else if (auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    hostpart = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (hostpart.empty()) return Error::InvalidArgument("url", "no host in " + std::string(text));
  for (char c : port)
    if (!std::isdigit(static_cast<unsigned char>(c))) return Error::InvalidArgument("url", "bad port in " + std::string(text));
  u.host = Lower(hostpart);
  u.port = port.empty() ? (u.scheme == "https" ? "443" : "80") : std::string(port);
  return u;
}

Result<Url> ResolveUrl(const Url& base, std::string_view location) {
  if (location.find("://") != std::string_view::npos) return ParseUrl(location);
  Url u = base;
  if (location.substr(0, 2) == "//") return ParseUrl(base.scheme + ":" + std::string(location));
  if (location.empty() || location[0] != '/')
    return Error::InvalidArgument("url", "unsupported relative redirect: " + std::string(location));
  u.target = std::string(location);
  return u;
}

bool IsLoopbackHost(std::string_view host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr a4;
  std::string h(host);
  if (inet_pton(AF_INET, h.c_str(), &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
  return false;
}

std::string Response::Header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

HttpClient::HttpClient(TlsOptions tls, std::chrono::milliseconds io_timeout)
    : tls_(std::move(tls)), io_timeout_(io_timeout) {}
HttpClient::~HttpClient() = default;

namespace {

Result<UniqueFd> ConnectTcp(const Url& url, std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(url.host.c_str(), url.port.c_str(), &hints, &res);
  if (rc != 0)
    return Error{ErrorCode::kUnavailable, "cannot resolve registry host " + url.host + ": " + gai_strerror(rc)};
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  std::string last = "no address";
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd) continue;
    int one = 1;
    setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
      last = std::strerror(errno);
      continue;
    }
    pollfd p{fd.get(), POLLOUT, 0};
    int r;
    do r = ::poll(&p, 1, static_cast<int>(timeout.count()));
    while (r < 0 && errno == EINTR);
    if (r == 0) {
      last = "timed out after " + std::to_string(timeout.count()) + " ms";
      continue;
    }
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      last = std::strerror(err);
      continue;
    }
    return fd;
  }
  return Error{ErrorCode::kUnavailable, "cannot connect to registry " + url.HostPort() + ": " + last};
}

// The trust for one registry: the system's CAs, the option's file, and Docker's certs.d/<host:port>/*.crt.
Result<std::unique_ptr<SSL_CTX, SslCtxFree>> MakeContext(const TlsOptions& tls, const Url& url) {
  std::unique_ptr<SSL_CTX, SslCtxFree> ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return Error{"TLS: cannot create a context: " + OpenSslErrors()};
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_options(ctx.get(), SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  SSL_CTX_set_default_verify_paths(ctx.get());
  if (!tls.ca_file.empty() && SSL_CTX_load_verify_locations(ctx.get(), tls.ca_file.c_str(), nullptr) != 1)
    return Error::InvalidArgument("ca_file", "TLS: cannot load the CA file " + tls.ca_file + " (--ca-file): " +
                                                 OpenSslErrors());
  std::string dir = tls.certs_dir + "/" + url.HostPort();
  if (DIR* d = tls.certs_dir.empty() ? nullptr : opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".crt") == 0) {
        std::string path = dir + "/" + name;
        if (SSL_CTX_load_verify_locations(ctx.get(), path.c_str(), nullptr) != 1) {
          closedir(d);
          return Error::InvalidArgument("ca_file", "TLS: cannot load the CA file " + path + ": " + OpenSslErrors());
        }
      }
    }
    closedir(d);
  }
  return ctx;
}

}  // namespace

Result<HttpClient::Conn*> HttpClient::ConnFor(const Url& url) {
  std::string key = url.Origin();
  auto it = conns_.find(key);
  if (it != conns_.end() && !it->second->dead) return it->second.get();
  auto conn = std::make_unique<Conn>();
  conn->timeout = io_timeout_;
  conn->where = url.HostPort();
  // Beast reads at most the buffer's free capacity (512 bytes when it has none): without room a
  // blob would cost two system calls per 512 bytes.
  conn->buffer.reserve(kReadBufferBytes);
  LSB_ASSIGN_OR_RETURN(conn->fd, ConnectTcp(url, io_timeout_));
  if (url.scheme == "https") {
    LSB_ASSIGN_OR_RETURN(conn->ctx, MakeContext(tls_, url));
    conn->ssl.reset(SSL_new(conn->ctx.get()));
    if (!conn->ssl) return Error{"TLS: cannot create a session: " + OpenSslErrors()};
    SSL_set_fd(conn->ssl.get(), conn->fd.get());
    if (IsIpLiteral(url.host)) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(conn->ssl.get()), url.host.c_str());
    } else {
      SSL_set_tlsext_host_name(conn->ssl.get(), url.host.c_str());
      SSL_set1_host(conn->ssl.get(), url.host.c_str());
    }
    beast::error_code ec;
    for (;;) {
      ERR_clear_error();
      int r = SSL_connect(conn->ssl.get());
      if (r == 1) break;
      int e = SSL_get_error(conn->ssl.get(), r);
      bool again = (e == SSL_ERROR_WANT_READ && conn->Wait(POLLIN, ec)) ||
                   (e == SSL_ERROR_WANT_WRITE && conn->Wait(POLLOUT, ec));
      if (again) continue;
      long verify = SSL_get_verify_result(conn->ssl.get());
      if (verify != X509_V_OK)
        return Error{ErrorCode::kPermissionDenied,
                     "TLS: the certificate of registry " + url.HostPort() + " is not trusted (" +
                         X509_verify_cert_error_string(verify) + "); give its CA with --ca-file FILE or put it in " +
                         tls_.certs_dir + "/" + url.HostPort() + "/ca.crt",
                     "tls.verify"};
      return Error{ErrorCode::kUnavailable,
                   "TLS handshake with registry " + url.HostPort() + " failed: " +
                       (ec ? ec.message() : OpenSslErrors()),
                   "tls.handshake"};
    }
  }
  Conn* raw = conn.get();
  conns_[key] = std::move(conn);
  return raw;
}

Result<Response> HttpClient::Send(const Request& req) {
  auto it = conns_.find(req.url.Origin());
  bool reused = it != conns_.end() && !it->second->dead;
  auto resp = SendOnce(req);
  // A kept-alive connection the server closed while idle fails at once: one fresh try, no backoff.
  if (!resp.ok() && reused && resp.error().code == ErrorCode::kUnavailable) resp = SendOnce(req);
  return resp;
}

Result<Response> HttpClient::SendOnce(const Request& req) {
  LSB_ASSIGN_OR_RETURN(Conn * conn, ConnFor(req.url));
  active_ = conn;
  http::request<http::empty_body> msg;
  msg.method_string(req.method);
  msg.target(req.url.target);
  msg.version(11);
  msg.set(http::field::host, req.url.HostPort());
  msg.set(http::field::user_agent, "llm-sandbox/" LSB_VERSION);
  for (const auto& [k, v] : req.headers) msg.set(k, v);
  beast::error_code ec;
  http::write(*conn, msg, ec);
  if (ec) return conn->Failure("send to", ec);
  conn->parser.emplace();
  conn->parser->header_limit(64 * 1024);
  conn->parser->body_limit(boost::none);  // ReadBody enforces the caller's limit
  conn->head_only = req.method == "HEAD";
  if (conn->head_only) conn->parser->skip(true);
  http::read_header(*conn, conn->buffer, *conn->parser, ec);
  if (ec) return conn->Failure("read a response from", ec);
  Response resp;
  const auto& h = conn->parser->get();
  resp.status = static_cast<int>(h.result_int());
  for (const auto& f : h) {
    std::string name = Lower(std::string(f.name_string()));
    std::string value(f.value());
    if (name == "www-authenticate") resp.www_authenticate.push_back(value);
    auto [it, inserted] = resp.headers.emplace(name, value);
    if (!inserted) it->second += ", " + value;
  }
  return resp;
}

Status HttpClient::ReadBody(const BodySink& sink, uint64_t limit) {
  Conn* conn = active_;
  if (conn == nullptr || !conn->parser) return Error{"registry client: ReadBody without a response"};
  active_ = nullptr;
  auto& parser = *conn->parser;
  if (auto len = parser.content_length(); len && *len > limit) {
    conn->dead = true;
    return Error{ErrorCode::kResourceExhausted, "registry " + conn->where + " sent a body of " + std::to_string(*len) +
                                                    " bytes where at most " + std::to_string(limit) + " were expected"};
  }
  uint64_t seen = 0;
  BodySink bounded = [&](const char* p, size_t n) -> Status {
    if (seen + n > limit)
      return Error{ErrorCode::kResourceExhausted, "registry " + conn->where + " sent more than the " +
                                                      std::to_string(limit) + " bytes expected"};
    seen += n;
    return sink(p, n);
  };
  parser.get().body().sink = &bounded;
  beast::error_code ec;
  if (!parser.is_done()) http::read(*conn, conn->buffer, parser, ec);
  parser.get().body().sink = nullptr;
  if (auto err = parser.get().body().error) {
    conn->dead = true;
    conn->parser.reset();
    return *err;
  }
  if (ec) {
    Error e = conn->Failure("read a response body from", ec);
    conn->parser.reset();
    return e;
  }
  if (!parser.keep_alive()) conn->dead = true;
  conn->parser.reset();
  return OkStatus();
}

Result<std::string> HttpClient::ReadBodyString(uint64_t limit) {
  std::string out;
  LSB_TRY(ReadBody([&](const char* p, size_t n) {
    out.append(p, n);
    return OkStatus();
  }, limit));
  return out;
}

void HttpClient::DiscardBody() {
  Conn* conn = active_;
  if (conn == nullptr) return;
  auto st = ReadBody([](const char*, size_t) { return OkStatus(); }, 64 * 1024);
  if (!st.ok()) conn->dead = true;
}

}  // namespace lsb::image::registry
