#include "server/e2b/sandbox_table.h"

#include <algorithm>

#include "base/random_id.h"

namespace lsb::server::e2b {
namespace {

bool SameSecret(const std::string& a, const std::string& b) {
  if (a.size() != b.size() || b.empty()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

std::string SandboxTable::NewAccessToken() { return RandomHex("ea-", 16); }

void SandboxTable::Add(SandboxRecord r) {
  std::lock_guard<std::mutex> lock(mu_);
  records_[r.id] = std::move(r);
}

std::optional<SandboxTable::Found> SandboxTable::Get(const std::string& id, const std::string& owner) {
  std::optional<SandboxRecord> rec;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = records_.find(id);
    if (it == records_.end() || it->second.owner != owner) return std::nullopt;
    rec = it->second;
  }
  auto s = sessions_.Get(id, owner);
  if (!s) {
    Forget(id);
    return std::nullopt;
  }
  return Found{std::move(*rec), std::move(s)};
}

std::optional<SandboxTable::Found> SandboxTable::Authenticate(const std::string& id, const std::string& token) {
  std::string owner;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = records_.find(id);
    if (it == records_.end() || !SameSecret(token, it->second.access_token)) return std::nullopt;
    owner = it->second.owner;
  }
  return Get(id, owner);
}

std::vector<SandboxTable::Found> SandboxTable::List(const std::string& owner) {
  std::vector<std::string> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, r] : records_)
      if (r.owner == owner) ids.push_back(id);
  }
  std::vector<Found> out;
  for (const auto& id : ids)
    if (auto f = Get(id, owner)) out.push_back(std::move(*f));
  return out;
}

std::optional<std::string> SandboxTable::AddContext(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = records_.find(id);
  if (it == records_.end() || it->second.contexts.size() >= kMaxContexts) return std::nullopt;
  std::string c = RandomHex("ctx-", 8);
  it->second.contexts.push_back(c);
  return c;
}

bool SandboxTable::RemoveContext(const std::string& id, const std::string& context) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = records_.find(id);
  if (it == records_.end()) return false;
  auto& cs = it->second.contexts;
  auto c = std::find(cs.begin(), cs.end(), context);
  if (c == cs.end()) return false;
  cs.erase(c);
  return true;
}

void SandboxTable::Forget(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  records_.erase(id);
}

}  // namespace lsb::server::e2b
