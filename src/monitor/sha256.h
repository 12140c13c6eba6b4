// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), small and dependency-free: the audit log
// hashes each program, webhooks sign each body. Not constant-time beyond what HMAC needs.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace lsb::monitor {

using Digest = std::array<uint8_t, 32>;

Digest Sha256(std::string_view data);
Digest HmacSha256(std::string_view key, std::string_view message);
std::string Hex(const Digest& d);  // lower-case

}  // namespace lsb::monitor
