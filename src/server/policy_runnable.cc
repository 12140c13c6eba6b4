#include "server/policy_runnable.h"

namespace lsb::server {

Runnability PolicyRunnability::Check(const Policy& policy) const {
  Status st = backend_.Check(policy);
  if (st.ok()) return {};
  return {false, "the " + backend_.name() + " backend of this daemon cannot run it: " + st.error().message +
                     "\n  fix: " + backend_.RefusalFix(policy)};
}

std::shared_ptr<const std::map<std::string, Runnability>> PolicyRunnability::For(
    const std::shared_ptr<const sched::PolicyStore::Map>& snapshot) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (snapshot_ == snapshot && verdicts_) return verdicts_;
  }
  // Outside the lock: Check probes the host. Two racing requests may both compute; either result
  // is the same.
  auto verdicts = std::make_shared<std::map<std::string, Runnability>>();
  for (const auto& [name, policy] : *snapshot) (*verdicts)[name] = Check(policy);
  std::lock_guard<std::mutex> lock(mu_);
  snapshot_ = snapshot;
  verdicts_ = verdicts;
  return verdicts;
}

Runnability PolicyRunnability::Of(const sched::PolicyStore& store, const Policy& policy) {
  auto snapshot = store.Snapshot();
  auto it = snapshot->find(policy.name);
  if (it == snapshot->end() || &it->second != &policy) return Check(policy);  // reloaded meanwhile
  return For(snapshot)->at(policy.name);
}

}  // namespace lsb::server
