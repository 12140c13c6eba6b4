#include "server/owner.h"

#include "base/sha256.h"

namespace lsb::server {

std::string OwnerOfToken(const std::string& token) {
  return "tok-" + Hex(Sha256(token)).substr(0, 16);
}

}  // namespace lsb::server
