// Which of the daemon's policies its backend can run, and why not. A policy the backend cannot
// enforce (python-gvisor on the native backend: runtime runsc) is marked in GET /v1/policies
// (`runnable`, `reason`), left out of the tool enums (MCP, client adapters), and an execute or a
// session under it is refused with 400 naming the backend and the fix, never started and failed
// with 502.
//
// The verdict is the backend's own fail-closed Check(policy), taken once per policy snapshot (the
// loaded set; a SIGHUP reload makes a new one): Check probes the host (cgroups, the init binary),
// which costs a fraction of a millisecond per policy and does not belong on every request. A host
// that breaks after loading still fails the start itself (502), as before.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/backend.h"
#include "scheduler/policy_store.h"

namespace lsb::server {

struct Runnability {
  bool runnable = true;
  std::string reason;  // empty when runnable: what the backend cannot do, then how to fix it
};

class PolicyRunnability {
 public:
  explicit PolicyRunnability(const Backend& backend) : backend_(backend) {}
  // Every policy of `snapshot`, by name (computed once per snapshot).
  std::shared_ptr<const std::map<std::string, Runnability>> For(
      const std::shared_ptr<const sched::PolicyStore::Map>& snapshot);
  // One policy (of the store's current snapshot when it is there; otherwise checked on its own).
  Runnability Of(const sched::PolicyStore& store, const Policy& policy);

 private:
  Runnability Check(const Policy& policy) const;

  const Backend& backend_;
  std::mutex mu_;
  std::shared_ptr<const sched::PolicyStore::Map> snapshot_;  // the one `verdicts_` is for
  std::shared_ptr<const std::map<std::string, Runnability>> verdicts_;
};

}  // namespace lsb::server
