// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), small and dependency-free: the audit log
// hashes each program, webhooks sign each body, the image store verifies every blob and layer
// (Sha256Hasher streams, so a layer is hashed as it is read). Not constant-time beyond what HMAC needs.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lsb {

using Digest = std::array<uint8_t, 32>;

// Incremental SHA-256: Update any number of times, then Finish once.
class Sha256Hasher {
 public:
  void Update(const void* data, size_t n);
  void Update(std::string_view d) { Update(d.data(), d.size()); }
  Digest Finish();

 private:
  void Compress(const uint8_t* block);

  uint32_t h_[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  uint8_t block_[64] = {};
  size_t fill_ = 0;
  uint64_t bits_ = 0;
};

Digest Sha256(std::string_view data);
Digest HmacSha256(std::string_view key, std::string_view message);
std::string Hex(const Digest& d);  // lower-case

}  // namespace lsb
