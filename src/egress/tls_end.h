// One side of a connection the egress proxy speaks TLS on itself (docs/network.md "Secrets over
// HTTPS"): the program's side, where the proxy is the server with a box CA's certificate, or the
// upstream's, where it is a client verifying the server's certificate and name. OpenSSL works on
// memory BIOs and this class moves the bytes to and from the non-blocking socket, so bytes read
// before the handshake (the ClientHello the SNI check looked at) are simply fed in first, and
// every wait honours a deadline and the proxy's stop descriptor.
#pragma once

#include <openssl/ssl.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"
#include "egress/box_ca.h"
#include "egress/socket_io.h"

namespace lsb::egress {

class TlsEnd {
 public:
  using Deadline = std::chrono::steady_clock::time_point;
  // `fd` is not owned and stays open while this lives. `already`: bytes read from it before.
  static Result<std::unique_ptr<TlsEnd>> Server(SSL_CTX* ctx, int fd, std::string_view already, Waits w);
  // Verifies the peer's certificate against `ctx`'s trust store and `host` as its name.
  static Result<std::unique_ptr<TlsEnd>> Client(SSL_CTX* ctx, int fd, const std::string& host, Waits w);
  ~TlsEnd();
  TlsEnd(const TlsEnd&) = delete;
  TlsEnd& operator=(const TlsEnd&) = delete;

  Status Handshake(Deadline deadline);
  // Some plaintext into `buf`: its size, or 0 once the peer closed. Waits until `deadline`.
  Result<size_t> Read(char* buf, size_t n, Deadline deadline);
  // Plaintext now, without waiting: its size, 0 when none is there yet, kEof once the peer closed.
  Result<size_t> TryRead(char* buf, size_t n);
  // What the socket has now, into the TLS engine (before TryRead, once poll says it is readable).
  Status Receive();
  Status Write(std::string_view data, Deadline deadline);
  // close_notify and the socket's write side shut.
  void Close(Deadline deadline);
  bool buffered() const;  // plaintext or records already read, waiting for TryRead
  int fd() const { return fd_; }

 private:
  TlsEnd(SSL* ssl, int fd, Waits w);
  Status Flush(Deadline deadline);
  Status FillOnce(Deadline deadline);
  Error Failure(const std::string& what, int ret);
  SSL* ssl_;
  BIO* rbio_;  // owned by ssl_
  BIO* wbio_;  // owned by ssl_
  int fd_;
  Waits w_;
  bool socket_eof_ = false;
};

}  // namespace lsb::egress
