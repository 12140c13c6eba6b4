#include "server/owner.h"

#include "monitor/sha256.h"

namespace lsb::server {

std::string OwnerOfToken(const std::string& token) {
  return "tok-" + monitor::Hex(monitor::Sha256(token)).substr(0, 16);
}

}  // namespace lsb::server
