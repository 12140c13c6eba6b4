// A box's own certificate authority (docs/network.md "Secrets over HTTPS"): made when a box whose
// policy has network.secrets starts, so the egress proxy can terminate the box's TLS to those hosts
// and add the header. Only the certificate enters the box (init adds it to the trust bundle the
// program's TLS clients read); the key stays in this process's memory and dies with the proxy.
// The CA is name-constrained to the secret hosts, so even its key could vouch for nothing else.
#pragma once

#include <openssl/ssl.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/result.h"

namespace lsb::egress {

struct SslCtxFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
using SslCtxPtr = std::shared_ptr<SSL_CTX>;

class BoxCa {
 public:
  // A new P-256 key and a self-signed CA certificate valid for 30 days, permitted to name only
  // `hosts` (and names below them, as X.509 name constraints go).
  static Result<std::shared_ptr<BoxCa>> Create(const std::vector<std::string>& hosts);
  ~BoxCa();
  BoxCa(const BoxCa&) = delete;
  BoxCa& operator=(const BoxCa&) = delete;

  const std::string& cert_pem() const { return cert_pem_; }
  // A TLS server context presenting a certificate for `host` signed by this CA (made on first use,
  // then kept). Only one of the hosts the CA was made for.
  Result<SslCtxPtr> ServerContextFor(const std::string& host);

 private:
  BoxCa() = default;
  EVP_PKEY* key_ = nullptr;
  X509* cert_ = nullptr;
  std::string cert_pem_;
  std::vector<std::string> hosts_;
  std::mutex mu_;
  std::map<std::string, SslCtxPtr> contexts_;
};

// The client context the proxy verifies upstream servers with: the host's default trust store, or
// only the certificates in `ca_file` when it is not empty (--egress-upstream-ca, for tests and
// private CAs). Peer verification on; the name is checked per connection (tls_end.h).
Result<SslCtxPtr> UpstreamContext(const std::string& ca_file);

// The OpenSSL error queue as text (and emptied), for messages.
std::string OpenSslErrors();

}  // namespace lsb::egress
