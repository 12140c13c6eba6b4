#include "egress/tls_end.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

namespace lsb::egress {
namespace {
constexpr size_t kChunk = 16 << 10;
}

TlsEnd::TlsEnd(SSL* ssl, int fd, Waits w) : ssl_(ssl), fd_(fd), w_(w) {
  rbio_ = BIO_new(BIO_s_mem());
  wbio_ = BIO_new(BIO_s_mem());
  BIO_set_mem_eof_return(rbio_, -1);  // empty means "more may come", until the socket's end
  SSL_set_bio(ssl_, rbio_, wbio_);
}

TlsEnd::~TlsEnd() { SSL_free(ssl_); }

Result<std::unique_ptr<TlsEnd>> TlsEnd::Server(SSL_CTX* ctx, int fd, std::string_view already, Waits w) {
  SSL* ssl = SSL_new(ctx);
  if (!ssl) return Error{"SSL_new: " + OpenSslErrors()};
  std::unique_ptr<TlsEnd> end(new TlsEnd(ssl, fd, w));
  SSL_set_accept_state(ssl);
  if (!already.empty() && BIO_write(end->rbio_, already.data(), static_cast<int>(already.size())) <= 0)
    return Error{"feed the ClientHello: " + OpenSslErrors()};
  return end;
}

Result<std::unique_ptr<TlsEnd>> TlsEnd::Client(SSL_CTX* ctx, int fd, const std::string& host, Waits w) {
  SSL* ssl = SSL_new(ctx);
  if (!ssl) return Error{"SSL_new: " + OpenSslErrors()};
  std::unique_ptr<TlsEnd> end(new TlsEnd(ssl, fd, w));
  SSL_set_connect_state(ssl);
  // SNI and the name the certificate must carry: the checked target, nothing the program chose.
  if (SSL_set_tlsext_host_name(ssl, host.c_str()) != 1 || SSL_set1_host(ssl, host.c_str()) != 1)
    return Error{"TLS name '" + host + "': " + OpenSslErrors()};
  SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  return end;
}

Error TlsEnd::Failure(const std::string& what, int ret) {
  int err = SSL_get_error(ssl_, ret);
  std::string why;
  if (long v = SSL_get_verify_result(ssl_); v != X509_V_OK && err == SSL_ERROR_SSL)
    why = std::string("certificate verify failed: ") + X509_verify_cert_error_string(v);
  else if (socket_eof_)
    why = "the peer closed the connection";
  else
    why = OpenSslErrors();
  ERR_clear_error();
  return Error{what + ": " + why};
}

Status TlsEnd::Flush(Deadline deadline) {
  char buf[kChunk];
  while (BIO_ctrl_pending(wbio_) > 0) {
    int n = BIO_read(wbio_, buf, sizeof buf);
    if (n <= 0) break;
    LSB_TRY(WriteAll(fd_, std::string_view(buf, static_cast<size_t>(n)), deadline, w_));
  }
  return OkStatus();
}

Status TlsEnd::Receive() {
  char buf[kChunk];
  for (;;) {
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n > 0) {
      BIO_write(rbio_, buf, static_cast<int>(n));
      if (static_cast<size_t>(n) < sizeof buf) return OkStatus();
      continue;
    }
    if (n == 0) {
      socket_eof_ = true;
      BIO_set_mem_eof_return(rbio_, 0);
      return OkStatus();
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return OkStatus();
    socket_eof_ = true;
    BIO_set_mem_eof_return(rbio_, 0);
    return Error::FromErrno("recv");
  }
}

Status TlsEnd::FillOnce(Deadline deadline) {
  if (socket_eof_) return Error{ErrorCode::kEof, "the peer closed the connection"};
  LSB_TRY(WaitFor(fd_, POLLIN, deadline, w_));
  return Receive();
}

Status TlsEnd::Handshake(Deadline deadline) {
  for (;;) {
    int r = SSL_do_handshake(ssl_);
    LSB_TRY(Flush(deadline));
    if (r == 1) return OkStatus();
    if (SSL_get_error(ssl_, r) != SSL_ERROR_WANT_READ || socket_eof_) return Failure("TLS handshake", r);
    LSB_TRY(FillOnce(deadline));
  }
}

Result<size_t> TlsEnd::TryRead(char* buf, size_t n) {
  int r = SSL_read(ssl_, buf, static_cast<int>(n));
  if (r > 0) return static_cast<size_t>(r);
  int err = SSL_get_error(ssl_, r);
  if (err == SSL_ERROR_ZERO_RETURN) return Error{ErrorCode::kEof, "closed"};
  if (err == SSL_ERROR_WANT_READ) {
    if (socket_eof_) return Error{ErrorCode::kEof, "closed without close_notify"};
    return size_t{0};
  }
  return Failure("TLS read", r);
}

Result<size_t> TlsEnd::Read(char* buf, size_t n, Deadline deadline) {
  for (;;) {
    auto got = TryRead(buf, n);
    if (!got.ok() && got.error().code == ErrorCode::kEof) return size_t{0};
    if (!got.ok() || *got > 0) return got;
    LSB_TRY(Flush(deadline));  // a TLS 1.3 key update may want an answer
    LSB_TRY(FillOnce(deadline));
  }
}

Status TlsEnd::Write(std::string_view data, Deadline deadline) {
  while (!data.empty()) {
    int r = SSL_write(ssl_, data.data(), static_cast<int>(std::min(data.size(), kChunk)));
    if (r <= 0) return Failure("TLS write", r);
    data.remove_prefix(static_cast<size_t>(r));
    LSB_TRY(Flush(deadline));
  }
  return OkStatus();
}

void TlsEnd::Close(Deadline deadline) {
  (void)SSL_shutdown(ssl_);
  (void)Flush(deadline);
  ::shutdown(fd_, SHUT_WR);
}

bool TlsEnd::buffered() const { return SSL_pending(ssl_) > 0 || BIO_ctrl_pending(rbio_) > 0; }

}  // namespace lsb::egress
