// The daemon's named policies, loaded from one directory (*.yaml, *.yml). Reload() is all or
// nothing: a bad file keeps the previous set and returns the loader's file:line:column error.
//
// Concurrency: readers take a snapshot (a shared_ptr to an immutable map) under `mu_`; a reload
// builds a new map outside the lock and swaps it in, so executions in flight keep their policy.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/result.h"
#include "policy/policy.h"

namespace lsb::sched {

class PolicyStore {
 public:
  using Map = std::map<std::string, Policy>;

  explicit PolicyStore(std::string dir) : dir_(std::move(dir)) {}
  // Loads every policy file of the directory; returns how many were loaded.
  Result<size_t> Reload();
  std::shared_ptr<const Map> Snapshot() const;
  // nullptr when no policy has that name.
  std::shared_ptr<const Policy> Find(const std::string& name) const;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  mutable std::mutex mu_;
  std::shared_ptr<const Map> policies_ = std::make_shared<Map>();
};

// The default policy directory: the first existing directory of PolicySearchPath(), or "" if none.
std::string DefaultPolicyDir();

}  // namespace lsb::sched
