// The daemon's table of open HTTP connections and the rule that gives out its slots (docs/api.md
// "Connection limits"). A slow client must not lock everyone out: when the table is full, or the
// arriving connection's peer already holds its share, the connection that has gone longest without
// progress among those that are idle or still sending their request is evicted to make room; only
// when every candidate is busy (its request is being answered) is the newcomer refused.
//
// Not thread-safe: HttpServer calls it under its own mutex. Time is passed in (unit tests).
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace lsb::server {

enum class ConnPhase {
  kIdle,         // keep-alive, between requests: evictable
  kReadingHead,  // the request line and headers are arriving: evictable
  kReadingBody,  // the body is arriving: evictable
  kBusy,         // the request is complete and being answered: never evicted
};

struct ConnLimits {
  size_t max_total = 512;
  size_t max_per_peer = 128;
};

// The key of a connection's source for the per-peer cap: the IPv4 address (an IPv4-mapped IPv6
// address counts as IPv4), the /64 prefix of an IPv6 address (one host usually holds a whole /64),
// the full address for IPv6 loopback.
std::string PeerKey(const sockaddr_storage& addr);

class ConnectionTable {
 public:
  using Clock = std::chrono::steady_clock;

  struct Admission {
    uint64_t id = 0;      // 0: refused (every candidate for eviction is busy)
    int evicted_fd = -1;  // >= 0: the caller shuts this connection down to make room
    std::string why;      // for a refusal: which limit
  };

  // True when bytes wait in the connection's socket that its thread has not read yet.
  using HasUnreadBytes = std::function<bool(int fd)>;
  // How many candidates one arrival may find with unread bytes before it evicts regardless.
  static constexpr int kUnreadChecks = 8;

  explicit ConnectionTable(ConnLimits limits) : limits_(limits) {}

  // A new connection from `peer`: its slot, after evicting one connection if a limit is reached.
  // A candidate with unread bytes has progressed though its thread has not got to them (a busy
  // host, a flood of arrivals): it counts as progressing now and the next one is tried, so a
  // client whose whole request is waiting to be read is not evicted for a thread's scheduling
  // delay. At most kUnreadChecks such candidates per arrival: its cost stays bounded.
  Admission Admit(int fd, const std::string& peer, Clock::time_point now, const HasUnreadBytes& unread = {});
  // The connection moved on (bytes arrived, a response was written): its phase and progress time.
  void Progress(uint64_t id, ConnPhase phase, Clock::time_point now);
  // True once the connection was chosen for eviction (its thread should stop).
  bool Evicted(uint64_t id) const;
  void Remove(uint64_t id);

  // The fds of connections not busy (to cut on shutdown), and of every connection.
  std::vector<int> IdleFds() const;
  std::vector<int> AllFds() const;
  bool empty() const { return conns_.empty(); }
  size_t size() const { return conns_.size(); }
  // Connections that hold a slot (evicted ones still closing do not).
  size_t live() const { return live_; }
  size_t evictions() const { return evictions_; }

 private:
  struct Conn {
    int fd;
    std::string peer;
    ConnPhase phase;
    Clock::time_point progress;
    bool evicted;
  };
  using ByProgress = std::set<std::pair<Clock::time_point, uint64_t>>;
  static bool Evictable(const Conn& c) { return !c.evicted && c.phase != ConnPhase::kBusy; }
  // The evictable connection with the oldest progress, among `peer`'s (or all when empty); 0 if none.
  uint64_t OldestEvictable(const std::string& peer) const;
  // OldestEvictable, passing over (and refreshing to `now`) up to kUnreadChecks with unread bytes.
  uint64_t ChooseVictim(const std::string& peer, Clock::time_point now, const HasUnreadBytes& unread);
  void Evict(uint64_t id);
  // Keep the eviction order in step with a connection (call Unindex before changing it).
  void Index(uint64_t id, const Conn& c);
  void Unindex(uint64_t id, const Conn& c);

  ConnLimits limits_;
  std::map<uint64_t, Conn> conns_;
  std::map<std::string, size_t> live_per_peer_;
  // The evictable connections ordered by progress, in all and per peer: a flood's every arrival
  // picks its victim in O(log n), not by a scan of the table.
  ByProgress evictable_;
  std::map<std::string, ByProgress> evictable_per_peer_;
  size_t live_ = 0;
  size_t evictions_ = 0;
  uint64_t next_id_ = 1;
};

}  // namespace lsb::server
