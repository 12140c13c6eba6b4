#include "base/reset_signals.h"

#include <signal.h>

namespace lsb {

void ResetSignals() {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s) ::sigaction(s, &dfl, nullptr);  // SIGKILL/SIGSTOP: EINVAL, harmless
}

}  // namespace lsb
