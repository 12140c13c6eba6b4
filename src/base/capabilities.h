// The calling thread's effective capabilities, from capget(2): one system call, where parsing
// /proc/self/status costs the kernel a whole status page (~60 us) on every box start.
#pragma once

namespace lsb {

// Whether capability `cap` (CAP_SYS_ADMIN, CAP_SYS_RESOURCE...) is in the effective set; false
// when capget fails.
bool HasEffectiveCapability(int cap);

}  // namespace lsb
