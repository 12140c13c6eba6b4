#include "egress/box_ca.h"

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include <algorithm>

namespace lsb::egress {
namespace {

constexpr long kValiditySeconds = 30L * 24 * 3600;

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

Error SslError(const std::string& what) { return Error{what + ": " + OpenSslErrors()}; }

Status AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (!ext) return SslError("certificate extension " + std::string(OBJ_nid2sn(nid)) + " '" + value + "'");
  int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  if (!ok) return SslError("add certificate extension");
  return OkStatus();
}

// A certificate for `cn` with `key`'s public half, its validity and a random serial; not signed.
Result<X509Ptr> NewCertificate(const std::string& cn, EVP_PKEY* key) {
  X509Ptr x(X509_new());
  if (!x) return SslError("X509_new");
  X509_set_version(x.get(), 2);
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof serial) != 1) return SslError("random serial");
  serial[0] &= 0x7f;  // positive
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  bool set = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x.get()));
  BN_free(bn);
  if (!set) return SslError("certificate serial");
  X509_gmtime_adj(X509_getm_notBefore(x.get()), -3600);  // a box clock a little behind still accepts it
  X509_gmtime_adj(X509_getm_notAfter(x.get()), kValiditySeconds);
  X509_set_pubkey(x.get(), key);
  X509_NAME* name = X509_get_subject_name(x.get());
  if (!X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(cn.c_str()),
                                  -1, -1, 0))
    return SslError("certificate subject");
  return x;
}

Result<PkeyPtr> NewKey() {
  PkeyPtr k(EVP_EC_gen("P-256"));
  if (!k) return SslError("generate a P-256 key");
  return k;
}

}  // namespace

std::string OpenSslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out += (out.empty() ? "" : "; ") + std::string(buf);
  }
  return out.empty() ? std::string("unknown OpenSSL error") : out;
}

Result<std::shared_ptr<BoxCa>> BoxCa::Create(const std::vector<std::string>& hosts) {
  if (hosts.empty()) return Error{"a box CA needs at least one host"};
  std::shared_ptr<BoxCa> ca(new BoxCa());
  ca->hosts_ = hosts;
  LSB_ASSIGN_OR_RETURN(PkeyPtr key, NewKey());
  LSB_ASSIGN_OR_RETURN(X509Ptr cert, NewCertificate("llm-sandbox egress proxy, one box's CA", key.get()));
  X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get()));
  std::string permitted = "critical";
  for (const std::string& h : hosts) permitted += ",permitted;DNS:" + h;
  LSB_TRY(AddExtension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0"));
  LSB_TRY(AddExtension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign"));
  LSB_TRY(AddExtension(cert.get(), cert.get(), NID_subject_key_identifier, "hash"));
  LSB_TRY(AddExtension(cert.get(), cert.get(), NID_name_constraints, permitted));
  if (!X509_sign(cert.get(), key.get(), EVP_sha256())) return SslError("sign the box CA");
  BIO* mem = BIO_new(BIO_s_mem());
  if (!mem || !PEM_write_bio_X509(mem, cert.get())) {
    BIO_free(mem);
    return SslError("the box CA as PEM");
  }
  char* data = nullptr;
  long n = BIO_get_mem_data(mem, &data);
  ca->cert_pem_.assign(data, static_cast<size_t>(n));
  BIO_free(mem);
  ca->key_ = key.release();
  ca->cert_ = cert.release();
  return ca;
}

BoxCa::~BoxCa() {
  X509_free(cert_);
  EVP_PKEY_free(key_);
}

Result<SslCtxPtr> BoxCa::ServerContextFor(const std::string& host) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = contexts_.find(host); it != contexts_.end()) return it->second;
  if (std::find(hosts_.begin(), hosts_.end(), host) == hosts_.end())
    return Error{"the box CA does not vouch for '" + host + "'"};
  LSB_ASSIGN_OR_RETURN(PkeyPtr key, NewKey());
  LSB_ASSIGN_OR_RETURN(X509Ptr leaf, NewCertificate(host, key.get()));
  X509_set_issuer_name(leaf.get(), X509_get_subject_name(cert_));
  LSB_TRY(AddExtension(leaf.get(), cert_, NID_basic_constraints, "critical,CA:FALSE"));
  LSB_TRY(AddExtension(leaf.get(), cert_, NID_key_usage, "critical,digitalSignature"));
  LSB_TRY(AddExtension(leaf.get(), cert_, NID_ext_key_usage, "serverAuth"));
  LSB_TRY(AddExtension(leaf.get(), cert_, NID_subject_alt_name, "DNS:" + host));
  LSB_TRY(AddExtension(leaf.get(), cert_, NID_subject_key_identifier, "hash"));
  LSB_TRY(AddExtension(leaf.get(), cert_, NID_authority_key_identifier, "keyid:always"));
  if (!X509_sign(leaf.get(), key_, EVP_sha256())) return SslError("sign the certificate for " + host);
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()), SslCtxFree{});
  if (!ctx) return SslError("SSL_CTX_new");
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  if (SSL_CTX_use_certificate(ctx.get(), leaf.get()) != 1 || SSL_CTX_use_PrivateKey(ctx.get(), key.get()) != 1)
    return SslError("the certificate for " + host);
  contexts_.emplace(host, ctx);
  return ctx;
}

Result<SslCtxPtr> UpstreamContext(const std::string& ca_file) {
  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()), SslCtxFree{});
  if (!ctx) return SslError("SSL_CTX_new");
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  int ok = ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx.get())
                           : SSL_CTX_load_verify_locations(ctx.get(), ca_file.c_str(), nullptr);
  if (ok != 1)
    return SslError(ca_file.empty() ? std::string("the host's trust store") : "--egress-upstream-ca '" + ca_file + "'");
  return ctx;
}

}  // namespace lsb::egress
