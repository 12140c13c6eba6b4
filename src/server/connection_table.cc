#include "server/connection_table.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

namespace lsb::server {

std::string PeerKey(const sockaddr_storage& addr) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
    return buf;
  }
  if (addr.ss_family == AF_INET6) {
    in6_addr a = reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&a)) {
      in_addr v4{};
      std::memcpy(&v4, a.s6_addr + 12, 4);
      ::inet_ntop(AF_INET, &v4, buf, sizeof buf);
      return buf;
    }
    if (!IN6_IS_ADDR_LOOPBACK(&a)) std::memset(a.s6_addr + 8, 0, 8);  // the /64
    ::inet_ntop(AF_INET6, &a, buf, sizeof buf);
    return IN6_IS_ADDR_LOOPBACK(&a) ? std::string(buf) : std::string(buf) + "/64";
  }
  return "unix";
}

ConnectionTable::Admission ConnectionTable::Admit(int fd, const std::string& peer, Clock::time_point now,
                                                  const HasUnreadBytes& unread) {
  Admission a;
  // Evicted connections still closing hold an fd and a thread for a moment; never let them pile
  // up past as many again as the table holds.
  if (conns_.size() >= 2 * limits_.max_total) {
    a.why = "too many connections closing; retry later";
    return a;
  }
  uint64_t victim = 0;
  auto peer_it = live_per_peer_.find(peer);
  size_t of_peer = peer_it == live_per_peer_.end() ? 0 : peer_it->second;
  if (of_peer >= limits_.max_per_peer) {
    // A peer at its cap can only displace its own connections.
    victim = ChooseVictim(peer, now, unread);
    if (victim == 0) {
      a.why = "too many connections from " + peer + " (" + std::to_string(limits_.max_per_peer) +
              ", all busy; --max-connections-per-peer); retry later";
      return a;
    }
  } else if (live_ >= limits_.max_total) {
    victim = ChooseVictim("", now, unread);
    if (victim == 0) {
      a.why = "too many connections (" + std::to_string(limits_.max_total) +
              ", all busy; --max-connections); retry later";
      return a;
    }
  }
  if (victim != 0) {
    a.evicted_fd = conns_.at(victim).fd;
    Evict(victim);
  }
  a.id = next_id_++;
  const Conn& added = conns_.emplace(a.id, Conn{fd, peer, ConnPhase::kReadingHead, now, false}).first->second;
  Index(a.id, added);
  ++live_per_peer_[peer];
  ++live_;
  return a;
}

void ConnectionTable::Progress(uint64_t id, ConnPhase phase, Clock::time_point now) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  Unindex(id, it->second);
  it->second.phase = phase;
  it->second.progress = now;
  Index(id, it->second);
}

bool ConnectionTable::Evicted(uint64_t id) const {
  auto it = conns_.find(id);
  return it == conns_.end() || it->second.evicted;
}

void ConnectionTable::Evict(uint64_t id) {
  Conn& c = conns_.at(id);
  if (c.evicted) return;
  Unindex(id, c);
  c.evicted = true;
  ++evictions_;
  --live_;
  auto it = live_per_peer_.find(c.peer);
  if (--it->second == 0) live_per_peer_.erase(it);
}

void ConnectionTable::Remove(uint64_t id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  Unindex(id, it->second);
  if (!it->second.evicted) {
    --live_;
    auto p = live_per_peer_.find(it->second.peer);
    if (--p->second == 0) live_per_peer_.erase(p);
  }
  conns_.erase(it);
}

uint64_t ConnectionTable::OldestEvictable(const std::string& peer) const {
  if (peer.empty()) return evictable_.empty() ? 0 : evictable_.begin()->second;
  auto it = evictable_per_peer_.find(peer);
  return it == evictable_per_peer_.end() ? 0 : it->second.begin()->second;
}

uint64_t ConnectionTable::ChooseVictim(const std::string& peer, Clock::time_point now,
                                       const HasUnreadBytes& unread) {
  uint64_t victim = OldestEvictable(peer);
  for (int checked = 0; unread && victim != 0 && checked < kUnreadChecks; ++checked) {
    Conn& c = conns_.at(victim);
    if (!unread(c.fd)) break;
    Progress(victim, c.phase, now);
    victim = OldestEvictable(peer);
  }
  return victim;
}

void ConnectionTable::Index(uint64_t id, const Conn& c) {
  if (!Evictable(c)) return;
  evictable_.emplace(c.progress, id);
  evictable_per_peer_[c.peer].emplace(c.progress, id);
}

void ConnectionTable::Unindex(uint64_t id, const Conn& c) {
  if (!Evictable(c)) return;
  evictable_.erase({c.progress, id});
  auto it = evictable_per_peer_.find(c.peer);
  if (it == evictable_per_peer_.end()) return;
  it->second.erase({c.progress, id});
  if (it->second.empty()) evictable_per_peer_.erase(it);  // a peer's set exists only while non-empty
}

std::vector<int> ConnectionTable::IdleFds() const {
  std::vector<int> out;
  for (const auto& [_, c] : conns_)
    if (c.phase != ConnPhase::kBusy) out.push_back(c.fd);
  return out;
}

std::vector<int> ConnectionTable::AllFds() const {
  std::vector<int> out;
  for (const auto& [_, c] : conns_) out.push_back(c.fd);
  return out;
}

}  // namespace lsb::server
