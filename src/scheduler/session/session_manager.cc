#include "scheduler/session/session_manager.h"

#include <cctype>

#include <chrono>
#include <cstdio>

#include "base/random_id.h"

namespace lsb::sched {

SessionManager::SessionManager(size_t max_sessions)
    : max_sessions_(max_sessions), queue_([this] {
        std::lock_guard<std::mutex> lock(mu_);
        return sessions_.size() >= max_sessions_ ? size_t{0} : max_sessions_ - sessions_.size();
      }) {}

SessionManager::~SessionManager() { Shutdown(); }

bool IsNodeName(const std::string& name) {
  if (name.empty() || name.size() > 63) return false;
  for (char ch : name)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_')) return false;
  return true;
}

std::string SessionManager::NewId() const {
  std::string id = RandomHex("ses-", 8);
  return node_.empty() ? id : id + "-" + node_;
}

size_t SessionManager::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.size();
}

bool SessionManager::Add(std::shared_ptr<Session> s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_ || sessions_.size() >= max_sessions_) return false;
  sessions_[s->id()] = std::move(s);
  return true;
}

std::shared_ptr<Session> SessionManager::Get(const std::string& id, const std::string& owner) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  return it == sessions_.end() || it->second->owner() != owner ? nullptr : it->second;
}

std::vector<std::shared_ptr<Session>> SessionManager::List(const std::string& owner) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<Session>> out;
  for (const auto& [_, s] : sessions_)
    if (s->owner() == owner) out.push_back(s);
  return out;
}

bool SessionManager::Remove(const std::string& id, const std::string& owner) {
  std::shared_ptr<Session> s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second->owner() != owner) return false;
    s = std::move(it->second);
    sessions_.erase(it);
  }
  queue_.Notify();  // the slot is free now; its box closes below
  s->Close();
  return true;
}

void SessionManager::StartReaper() {
  reaper_ = std::thread([this] { Reap(); });
}

void SessionManager::Reap() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, std::chrono::milliseconds(500));
    if (stopping_) break;
    auto now = std::chrono::steady_clock::now();
    std::vector<std::shared_ptr<Session>> expired;
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (it->second->Expired(now)) {
        expired.push_back(std::move(it->second));
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
    lock.unlock();
    if (!expired.empty()) queue_.Notify();
    for (auto& s : expired) {
      std::fprintf(stderr, "serve: session %s expired; closing it\n", s->id().c_str());
      s->Close();
    }
    expired.clear();
    lock.lock();
  }
}

void SessionManager::Shutdown() {
  std::map<std::string, std::shared_ptr<Session>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    all.swap(sessions_);
  }
  queue_.Shutdown();
  cv_.notify_all();
  if (reaper_.joinable()) reaper_.join();
  for (auto& [_, s] : all) s->Close();
}

}  // namespace lsb::sched
