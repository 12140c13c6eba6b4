// The fork server's zygote (fork_server.h): python source run by the image's own interpreter as
// the one program of the zygote box, as `python3 -c SOURCE PRELUDE`: src/inbox/fork_server.py,
// embedded at build time so the daemon and the binary it ships with always agree on the protocol.
#include "runtime/native/fork_server.h"

#include "inbox/inbox_sources.h"

namespace lsb::native {

const char* ForkServerSource() {
  return inbox::ForkServerSource().data();
}

}  // namespace lsb::native
