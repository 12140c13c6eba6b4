#include "monitor/cpu_share.h"

#include <unistd.h>

namespace lsb::monitor {

double CpuLimitCores(double policy_cpu) {
  if (policy_cpu > 0) return policy_cpu;
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<double>(n) : 1.0;
}

}  // namespace lsb::monitor
