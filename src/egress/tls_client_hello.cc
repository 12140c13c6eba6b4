#include "egress/tls_client_hello.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace lsb::egress {
namespace {

// A bounds-checked reader over one handshake message: every read past the end fails.
class Reader {
 public:
  explicit Reader(std::string_view b) : b_(b) {}
  bool Skip(size_t n) {
    if (b_.size() - pos_ < n) return false;
    pos_ += n;
    return true;
  }
  bool U8(size_t* v) { return Int(1, v); }
  bool U16(size_t* v) { return Int(2, v); }
  bool U24(size_t* v) { return Int(3, v); }
  bool Sub(size_t n, Reader* out) {
    if (b_.size() - pos_ < n) return false;
    *out = Reader(b_.substr(pos_, n));
    pos_ += n;
    return true;
  }
  bool Bytes(size_t n, std::string_view* out) {
    if (b_.size() - pos_ < n) return false;
    *out = b_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  bool empty() const { return pos_ == b_.size(); }

 private:
  bool Int(size_t n, size_t* v) {
    if (b_.size() - pos_ < n) return false;
    *v = 0;
    for (size_t i = 0; i < n; ++i) *v = (*v << 8) | static_cast<uint8_t>(b_[pos_ + i]);
    pos_ += n;
    return true;
  }
  std::string_view b_;
  size_t pos_ = 0;
};

// The server_name extension's host_name (RFC 6066 §3).
bool ReadServerName(Reader ext, std::optional<std::string>* sni) {
  size_t list_len = 0;
  Reader list(std::string_view{});
  if (!ext.U16(&list_len) || !ext.Sub(list_len, &list)) return false;
  while (!list.empty()) {
    size_t type = 0, len = 0;
    std::string_view name;
    if (!list.U8(&type) || !list.U16(&len) || !list.Bytes(len, &name)) return false;
    if (type != 0) continue;
    if (sni->has_value() || name.empty()) return false;  // two host names, or an empty one: refuse
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    *sni = std::move(lower);
  }
  return true;
}

}  // namespace

ClientHelloSni ParseClientHelloSni(std::string_view bytes) {
  using S = ClientHelloSni::Status;
  ClientHelloSni out;
  if (bytes.empty()) return out;
  if (static_cast<uint8_t>(bytes[0]) != 0x16) return {S::kNotTls, 0, std::nullopt};  // not a handshake record
  if (bytes.size() < 5) return out;
  size_t record_len = (static_cast<uint8_t>(bytes[3]) << 8) | static_cast<uint8_t>(bytes[4]);
  if (static_cast<uint8_t>(bytes[1]) != 3 || record_len == 0 || record_len + 5 > kMaxTlsRecord)
    return {S::kMalformed, 0, std::nullopt};
  out.record_bytes = record_len + 5;
  if (bytes.size() < out.record_bytes) return out;
  Reader rec(bytes.substr(5, record_len));
  size_t type = 0, hs_len = 0;
  Reader hello(std::string_view{});
  if (!rec.U8(&type) || type != 1 || !rec.U24(&hs_len) || !rec.Sub(hs_len, &hello)) return {S::kMalformed, 0, std::nullopt};
  size_t n = 0;
  if (!hello.Skip(2 + 32) || !hello.U8(&n) || !hello.Skip(n) || !hello.U16(&n) || !hello.Skip(n) || !hello.U8(&n) ||
      !hello.Skip(n))
    return {S::kMalformed, 0, std::nullopt};
  out.status = S::kOk;
  if (hello.empty()) return out;  // no extensions at all: no SNI
  Reader exts(std::string_view{});
  if (!hello.U16(&n) || !hello.Sub(n, &exts)) return {S::kMalformed, 0, std::nullopt};
  while (!exts.empty()) {
    size_t ext_type = 0, ext_len = 0;
    Reader ext(std::string_view{});
    if (!exts.U16(&ext_type) || !exts.U16(&ext_len) || !exts.Sub(ext_len, &ext)) return {S::kMalformed, 0, std::nullopt};
    if (ext_type == 0 && !ReadServerName(ext, &out.sni)) return {S::kMalformed, 0, std::nullopt};
  }
  return out;
}

}  // namespace lsb::egress
