// The server name (SNI) a TLS ClientHello carries, read from the first TLS record the program sends
// through a CONNECT tunnel, so that a CONNECT to an allowed name cannot carry TLS for another one.
// Pure: bytes in, verdict out. A ClientHello split over several records is not read (kMalformed:
// refused, fail closed); clients send it in one.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace lsb::egress {

// The largest TLS record (RFC 8446: 2^14 bytes of plaintext) with its 5-byte header.
inline constexpr size_t kMaxTlsRecord = (1u << 14) + 5;

struct ClientHelloSni {
  enum class Status { kNeedMore, kNotTls, kMalformed, kOk };
  Status status = Status::kNeedMore;
  size_t record_bytes = 0;          // kNeedMore/kOk: the first record's whole length (header included), once known
  std::optional<std::string> sni;   // kOk: the host_name, lower-cased; nullopt when the hello has none
};

ClientHelloSni ParseClientHelloSni(std::string_view bytes);

}  // namespace lsb::egress
