// Brings the loopback device of the caller's network namespace up (SIOCSIFFLAGS): a box's own
// 127.0.0.1 and ::1. Raw calls only, no allocation: for the launcher's child between clone and
// exec, and for liblsb-fork.so (no libstdc++).
#pragma once

namespace lsb {

bool BringLoopbackUp();

}  // namespace lsb
