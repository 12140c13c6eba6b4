// CPU use relative to what an execution was allowed: cpu_ms / (duration_ms * cores) as a percent,
// where cores is the policy's resources.cpu, or the host's CPU count when the policy sets none.
// 100 means the program used all it was given for its whole run.
#pragma once

#include <cstdint>
#include <optional>

namespace lsb::monitor {

// The cores an execution may use: `policy_cpu` (resources.cpu), or every online CPU when 0.
double CpuLimitCores(double policy_cpu);

// nullopt when nothing can be said (no wall time, or no limit).
inline std::optional<double> CpuPercentOfLimit(double cpu_ms, double duration_ms, double cores) {
  if (duration_ms <= 0 || cores <= 0 || cpu_ms < 0) return std::nullopt;
  return 100.0 * cpu_ms / (duration_ms * cores);
}

}  // namespace lsb::monitor
