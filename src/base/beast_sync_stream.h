// Boost.Beast's SyncReadStream / SyncWriteStream over any class that reads and writes plain byte
// ranges: `Derived` provides Read(void*, size_t, error_code&) and Write(const void*, size_t,
// error_code&) (each moving at least one byte, or failing), and gets read_some / write_some on
// buffer sequences from this base (CRTP). The daemon's connection socket and the registry
// client's plain or TLS connection are both such classes; each keeps its own deadlines.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/system/system_error.hpp>

namespace lsb {

template <class Derived>
class BeastSyncStream {
 public:
  static constexpr size_t kGatherBytes = 8192;

  // The first non-empty buffer of the sequence gets one Read; Beast calls again for the rest.
  template <class MutableBufferSequence>
  size_t read_some(const MutableBufferSequence& buffers, boost::beast::error_code& ec) {
    for (auto it = boost::asio::buffer_sequence_begin(buffers); it != boost::asio::buffer_sequence_end(buffers); ++it) {
      boost::asio::mutable_buffer b = *it;
      if (b.size() > 0) return self().Read(b.data(), b.size(), ec);
    }
    ec = {};
    return 0;
  }
  template <class MutableBufferSequence>
  size_t read_some(const MutableBufferSequence& buffers) {
    boost::beast::error_code ec;
    size_t n = read_some(buffers, ec);
    if (ec) throw boost::system::system_error{ec};
    return n;
  }
  // Small pieces are copied into one Write of up to kGatherBytes: Beast's serializer yields the
  // status line and each header field apart, and one write each sent a packet each (TCP_NODELAY).
  // A piece that large or larger goes as it is.
  template <class ConstBufferSequence>
  size_t write_some(const ConstBufferSequence& buffers, boost::beast::error_code& ec) {
    char gather[kGatherBytes];
    size_t used = 0;
    for (auto it = boost::asio::buffer_sequence_begin(buffers); it != boost::asio::buffer_sequence_end(buffers); ++it) {
      boost::asio::const_buffer b = *it;
      if (b.size() == 0) continue;
      if (used == 0 && b.size() >= kGatherBytes) return self().Write(b.data(), b.size(), ec);
      const size_t take = std::min(b.size(), kGatherBytes - used);
      std::memcpy(gather + used, b.data(), take);
      used += take;
      if (used == kGatherBytes) break;
    }
    if (used == 0) {
      ec = {};
      return 0;
    }
    return self().Write(gather, used, ec);
  }
  template <class ConstBufferSequence>
  size_t write_some(const ConstBufferSequence& buffers) {
    boost::beast::error_code ec;
    size_t n = write_some(buffers, ec);
    if (ec) throw boost::system::system_error{ec};
    return n;
  }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
};

}  // namespace lsb
