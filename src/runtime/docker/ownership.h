// Who owns a container: every container we create is labelled with its owner process
// ("<host>/<pid>/<start time>"). A process that dies (SIGKILL, crash) leaves containers whose owner
// is gone; the next CLI or daemon start finds them by label and removes them. Containers of live
// owners (a concurrent CLI) and of other hosts sharing the engine are left alone.
#pragma once

#include <string>

#include "base/result.h"
#include "runtime/docker/engine_client.h"

namespace lsb::docker {

// This process's owner label value.
std::string OwnerLabel();
// True when `owner` names a process that is still running on this host (pid and start time match),
// or a process on another host (not ours to judge).
bool OwnerAlive(const std::string& owner);

struct ReapReport {
  int removed = 0;
  int kept = 0;
};
// Removes every container labelled by a dead owner of this host.
Result<ReapReport> ReapOrphans(const EngineClient& engine);

}  // namespace lsb::docker
