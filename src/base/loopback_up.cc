#include "base/loopback_up.h"

#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace lsb {

bool BringLoopbackUp() {
  int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return false;
  struct ifreq req {};
  std::memcpy(req.ifr_name, "lo", 3);
  bool ok = ::ioctl(s, SIOCGIFFLAGS, &req) == 0;
  if (ok) {
    req.ifr_flags = static_cast<short>(req.ifr_flags | IFF_UP);
    ok = ::ioctl(s, SIOCSIFFLAGS, &req) == 0;
  }
  ::close(s);
  return ok;
}

}  // namespace lsb
