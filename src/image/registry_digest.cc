#include "image/registry_digest.h"

#include <fcntl.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "base/unique_fd.h"

namespace lsb::image::registry {

struct Sha256Stream::Impl {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~Impl() { EVP_MD_CTX_free(ctx); }
};

Sha256Stream::Sha256Stream() : impl_(std::make_unique<Impl>()) { Reset(); }
Sha256Stream::~Sha256Stream() = default;

void Sha256Stream::Reset() { EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr); }

void Sha256Stream::Update(const void* data, size_t n) { EVP_DigestUpdate(impl_->ctx, data, n); }

std::string Sha256Stream::FinishDigest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(impl_->ctx, md, &len);
  static const char* hex = "0123456789abcdef";
  std::string out = "sha256:";
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(hex[md[i] >> 4]);
    out.push_back(hex[md[i] & 15]);
  }
  Reset();
  return out;
}

std::string Sha256Digest(std::string_view data) {
  Sha256Stream s;
  s.Update(data.data(), data.size());
  return s.FinishDigest();
}

Status HashFileInto(const std::string& path, Sha256Stream& into, uint64_t* size) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return Error::FromErrno("open " + path);
  std::string buf(1 << 20, '\0');
  *size = 0;
  for (;;) {
    ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::FromErrno("read " + path);
    if (n == 0) return OkStatus();
    into.Update(buf.data(), static_cast<size_t>(n));
    *size += static_cast<uint64_t>(n);
  }
}

}  // namespace lsb::image::registry
