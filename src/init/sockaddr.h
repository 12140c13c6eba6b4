// Decoding of socket addresses copied out of a watched process (connect, sendto, sendmsg, bind),
// for alerts ("127.0.0.1:6379") and for the network decision. Pure: bytes in, words out.
#pragma once

#include <string>
#include <string_view>

namespace lsb::init {

struct SockAddrInfo {
  int family = -1;    // AF_*, or -1 when there is no address (NULL pointer / zero length)
  bool inet = false;  // AF_INET or AF_INET6: leaves the box when the network is on
  std::string text;   // "127.0.0.1:6379", "[::1]:80", "unix:/run/x.sock", "unix:@abstract"
};

// `raw` is the sockaddr exactly as the caller passed it (addrlen bytes, at most 128).
SockAddrInfo DescribeSockaddr(std::string_view raw);

}  // namespace lsb::init
