// The E2B front door's record of its sandboxes (docs/e2b.md). An E2B sandbox IS a session (the
// same id, owner, policy, lifetime); this table adds only what the E2B wire needs on top: the
// template it was created from, its metadata, and the per-sandbox access token the data plane
// checks (X-Access-Token). A record whose session is gone (deleted, expired) is dropped when
// looked up: the session manager stays the one source of truth about what is alive.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scheduler/session/session.h"
#include "scheduler/session/session_manager.h"

namespace lsb::server::e2b {

// The most metadata one sandbox keeps (create's `metadata`): entries, and bytes of each key/value.
inline constexpr size_t kMaxMetadataEntries = 64;
inline constexpr size_t kMaxMetadataBytes = 1024;
// The most code contexts one sandbox holds besides "default" (each is a globals dict in the one
// interpreter: its memory counts against the box's, the count bounds the bookkeeping).
inline constexpr size_t kMaxContexts = 8;

struct SandboxRecord {
  std::string id;            // the session's id
  std::string owner;         // the session's owner (the X-API-KEY's identity)
  std::string template_id;   // as the client named it
  std::string access_token;  // "ea-" + 32 hex digits, answered once as envdAccessToken
  nlohmann::json metadata = nlohmann::json::object();
  std::chrono::system_clock::time_point started_at;
  std::map<std::string, std::string> envs;  // create's envVars (checked by env_rules)
  std::vector<std::string> contexts;        // code contexts other than "default", oldest first
};

class SandboxTable {
 public:
  explicit SandboxTable(sched::SessionManager& sessions) : sessions_(sessions) {}
  static std::string NewAccessToken();

  void Add(SandboxRecord r);
  // The record and its live session for `owner` (the control plane); nullopt when either is gone.
  struct Found {
    SandboxRecord record;
    std::shared_ptr<sched::Session> session;
  };
  std::optional<Found> Get(const std::string& id, const std::string& owner);
  // The data plane: the sandbox `id` whose access token is `token` (compared in constant time).
  // nullopt for an unknown id, a wrong token or a session that is gone: the caller cannot tell
  // which, so an id cannot be probed without its token.
  std::optional<Found> Authenticate(const std::string& id, const std::string& token);
  std::vector<Found> List(const std::string& owner);
  // Code contexts of sandbox `id`: a new one's id, or nullopt at kMaxContexts (or gone).
  std::optional<std::string> AddContext(const std::string& id);
  bool RemoveContext(const std::string& id, const std::string& context);
  void Forget(const std::string& id);

 private:
  sched::SessionManager& sessions_;
  std::mutex mu_;
  std::map<std::string, SandboxRecord> records_;
};

}  // namespace lsb::server::e2b
