// The live sessions by id, and the reaper thread that closes expired ones (idle timeout, max
// lifetime). Sessions are shared_ptr: a request holding one keeps it alive while the manager drops
// it, and Session::Close() makes the last operation end.
//
// Concurrency: `mu_` guards `sessions_` only; sessions are closed outside it (closing waits for a
// run to die). The reaper is owned here and joined by Shutdown() / the destructor.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "scheduler/session/session.h"
#include "scheduler/session/session_queue.h"

namespace lsb::sched {

// A node name as session ids and HTTP headers carry it: 1 to 63 letters, digits, - or _.
bool IsNodeName(const std::string& name);

class SessionManager {
 public:
  explicit SessionManager(size_t max_sessions);
  ~SessionManager();

  size_t max_sessions() const { return max_sessions_; }
  size_t count() const;
  // The line creates wait in for a slot (session_queue.h): it counts this manager's sessions and is
  // told when one goes away (Remove, the reaper). Shutdown() ends its waits.
  SessionQueue& queue() { return queue_; }
  // A fresh id ("ses-" + 16 hex digits).
  // "ses-<16 hex>", then "-<node>" when the manager has a node tag (set_node): a front routes a
  // session's requests to its node by the id alone (deploy/swarm/haproxy.cfg).
  std::string NewId() const;
  void set_node(std::string node) { node_ = std::move(node); }
  // False when the manager is full or shut down (the session is then closed by its destructor).
  bool Add(std::shared_ptr<Session> s);
  // Lookups see only the sessions of `owner` (server/owner.h): another owner's session is absent,
  // exactly as one that never existed.
  std::shared_ptr<Session> Get(const std::string& id, const std::string& owner) const;
  std::vector<std::shared_ptr<Session>> List(const std::string& owner) const;
  // Removes and closes; false when `owner` has no such session.
  bool Remove(const std::string& id, const std::string& owner);

  void StartReaper();
  // Stops the reaper, refuses new sessions and closes every session. Idempotent.
  void Shutdown();

 private:
  void Reap();
  const size_t max_sessions_;
  std::string node_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::shared_ptr<Session>> sessions_;
  bool stopping_ = false;
  std::thread reaper_;
  SessionQueue queue_;  // last: its slots count sessions_ under mu_
};

}  // namespace lsb::sched
