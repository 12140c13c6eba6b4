#include "init/sockaddr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace lsb::init {

SockAddrInfo DescribeSockaddr(std::string_view raw) {
  SockAddrInfo info;
  if (raw.size() < sizeof(sa_family_t)) return info;
  sa_family_t fam;
  std::memcpy(&fam, raw.data(), sizeof fam);
  info.family = fam;
  char buf[INET6_ADDRSTRLEN] = {};
  switch (fam) {
    case AF_INET: {
      info.inet = true;
      sockaddr_in sin{};
      if (raw.size() < sizeof sin) {
        info.text = "inet:(truncated address)";
        return info;
      }
      std::memcpy(&sin, raw.data(), sizeof sin);
      ::inet_ntop(AF_INET, &sin.sin_addr, buf, sizeof buf);
      info.text = std::string(buf) + ":" + std::to_string(ntohs(sin.sin_port));
      return info;
    }
    case AF_INET6: {
      info.inet = true;
      sockaddr_in6 sin6{};
      // The kernel accepts the 24-byte RFC 2133 form without sin6_scope_id.
      if (raw.size() < offsetof(sockaddr_in6, sin6_scope_id)) {
        info.text = "inet6:(truncated address)";
        return info;
      }
      std::memcpy(&sin6, raw.data(), std::min(raw.size(), sizeof sin6));
      ::inet_ntop(AF_INET6, &sin6.sin6_addr, buf, sizeof buf);
      info.text = "[" + std::string(buf) + "]:" + std::to_string(ntohs(sin6.sin6_port));
      return info;
    }
    case AF_UNIX: {
      std::string_view path = raw.substr(offsetof(sockaddr_un, sun_path));
      if (path.empty()) {
        info.text = "unix:(unnamed)";
      } else if (path[0] == '\0') {
        std::string name(path.substr(1));
        for (char& c : name)
          if (c == '\0') c = '@';
        info.text = "unix:@" + name;
      } else {
        info.text = "unix:" + std::string(path.substr(0, path.find('\0')));
      }
      return info;
    }
    case AF_UNSPEC:
      info.text = "unspec";
      return info;
    default:
      info.text = "family " + std::to_string(fam);
      return info;
  }
}

}  // namespace lsb::init
