#include "scheduler/policy_store.h"

#include <algorithm>
#include <filesystem>

#include "policy/policy_loader.h"

namespace lsb::sched {

namespace fs = std::filesystem;

Result<size_t> PolicyStore::Reload() {
  std::error_code ec;
  if (!fs::is_directory(dir_, ec))
    return Error{"policy directory " + dir_ + " does not exist or is not a directory; pass --policies DIR"};
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    auto ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml")) files.push_back(e.path().string());
  }
  if (ec) return Error{"cannot list policy directory " + dir_ + ": " + ec.message()};
  std::sort(files.begin(), files.end());
  auto next = std::make_shared<Map>();
  std::map<std::string, std::string> origin;
  for (const auto& f : files) {
    auto p = LoadPolicyFile(f);
    if (!p.ok()) return p.error();
    if (origin.count(p->name))
      return Error{f + ": policy name '" + p->name + "' is already used by " + origin[p->name] +
                   "; every policy in " + dir_ + " needs its own name"};
    origin[p->name] = f;
    next->emplace(p->name, std::move(*p));
  }
  size_t n = next->size();
  std::lock_guard<std::mutex> lock(mu_);
  policies_ = std::move(next);
  return n;
}

std::shared_ptr<const PolicyStore::Map> PolicyStore::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return policies_;
}

std::shared_ptr<const Policy> PolicyStore::Find(const std::string& name) const {
  auto snap = Snapshot();
  auto it = snap->find(name);
  if (it == snap->end()) return nullptr;
  // Aliasing constructor: the policy lives as long as its snapshot.
  return std::shared_ptr<const Policy>(snap, &it->second);
}

std::string DefaultPolicyDir() {
  std::error_code ec;
  for (const auto& d : PolicySearchPath())
    if (fs::is_directory(d, ec)) return d;
  return "";
}

}  // namespace lsb::sched
