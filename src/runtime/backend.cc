#include "runtime/backend.h"

namespace lsb {

Result<std::string> Backend::BoxShape(const Policy& /*policy*/, const protocol::BoxSetup& /*setup*/) const {
  return Error{"the " + name() + " backend does not describe its boxes: none is handed out from a pool"};
}

Result<std::string> Backend::ShapeFor(const Policy& policy) const {
  LSB_ASSIGN_OR_RETURN(protocol::BoxSetup setup, SetupFor(policy));
  return BoxShape(policy, setup);
}

}  // namespace lsb
