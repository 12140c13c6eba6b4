#include "base/capabilities.h"

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace lsb {

bool HasEffectiveCapability(int cap) {
  if (cap < 0 || cap >= 64) return false;
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  const uint64_t effective = data[0].effective | (static_cast<uint64_t>(data[1].effective) << 32);
  return (effective >> cap) & 1;
}

}  // namespace lsb
