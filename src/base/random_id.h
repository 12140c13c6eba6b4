// Random identifiers (execution, session, box and MCP session ids; end-of-output markers).
#pragma once

#include <cstddef>
#include <string>

namespace lsb {

// `prefix` followed by 2*bytes lowercase hex digits from the kernel's CSPRNG (getrandom, else
// /dev/urandom). Only where neither answers (a host seccomp profile without getrandom and no /dev)
// the digits come from the clock and a counter: still unique in this process, no longer secret.
std::string RandomHex(const std::string& prefix, size_t bytes);

}  // namespace lsb
