#include "scheduler/session.h"

#include <algorithm>

namespace lsb::sched {

using SteadyClock = std::chrono::steady_clock;
using WallClock = std::chrono::system_clock;

Session::Session(const Policy& policy, SessionConfig config, std::string id)
    : policy_(policy),
      config_(std::move(config)),
      id_(std::move(id)),
      created_wall_(WallClock::now()),
      created_(SteadyClock::now()),
      last_used_(created_),
      last_used_wall_(created_wall_) {}

Result<std::unique_ptr<Session>> Session::Open(Backend& backend, BoxRegistry& registry,
                                               const Policy& policy, SessionConfig config, std::string id) {
  if (config.language.empty()) config.language = policy.default_language;
  if (!policy.FindLanguage(config.language))
    return Error{"policy '" + policy.name + "' has no language '" + config.language + "'"};
  std::unique_ptr<Session> s(new Session(policy, std::move(config), std::move(id)));
  LSB_ASSIGN_OR_RETURN(s->box_, BoxSession::Open(backend, s->policy_));
  s->lease_ = std::make_unique<BoxRegistry::Lease>(registry, s->box_.get());
  if (s->config_.language == "python") {
    // Start the interpreter now, so the first execute pays only for its own code.
    auto d = PythonDriver::Start(*s->box_, s->RemainingLifetimeMs());
    if (!d.ok()) return d.error();
    s->driver_ = std::move(*d);
  }
  return s;
}

Session::~Session() { Close(); }

uint64_t Session::RemainingLifetimeMs() const {
  auto used = std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - created_).count();
  uint64_t u = used > 0 ? static_cast<uint64_t>(used) : 0;
  return u >= config_.max_lifetime_ms ? 1000 : config_.max_lifetime_ms - u + 1000;
}

void Session::Touch(bool executed) {
  std::lock_guard<std::mutex> lock(info_mu_);
  last_used_ = SteadyClock::now();
  last_used_wall_ = WallClock::now();
  if (executed) ++executions_;
}

Result<PythonDriver*> Session::Driver() {
  if (!box_ || !box_->usable())
    return Error{"session " + id_ + "'s box was killed or broke; delete it and create a new session"};
  if (!driver_ || !driver_->alive()) {
    driver_.reset();
    LSB_ASSIGN_OR_RETURN(driver_, PythonDriver::Start(*box_, RemainingLifetimeMs()));
  }
  return driver_.get();
}

Result<ExecResult> Session::Execute(const ExecRequest& req, const CollectLimits& collect) {
  Touch(false);
  std::string lang = req.language.empty() ? config_.language : req.language;
  Result<ExecResult> r = Error{""};
  if (RunsInInterpreter(req)) {
    LSB_ASSIGN_OR_RETURN(PythonDriver * d, Driver());
    uint64_t timeout = req.timeout_ms ? std::min(*req.timeout_ms, policy_.timeout_ms) : policy_.timeout_ms;
    r = d->Execute(req.code, req.stdin_data.value_or(""), timeout, policy_.output_bytes);
  } else {
    if (!box_ || !box_->usable())
      return Error{"session " + id_ + "'s box was killed or broke; delete it and create a new session"};
    if (driver_ && driver_->alive()) driver_->Stop();  // init runs one program at a time
    ExecRequest one = req;
    one.language = lang;
    r = box_->Run(one);
  }
  if (r.ok() && !req.collect.empty()) {
    if (!box_->usable()) {
      for (const auto& p : req.collect) r->collected.push_back({p, "", "not collected: the session's box ended with the program"});
    } else {
      auto d = Driver();
      auto got = d.ok() ? CollectFromBox(**d, req.collect, collect) : Result<std::vector<CollectedFile>>(d.error());
      if (config_.language != "python") driver_.reset();
      if (got.ok()) r->collected = std::move(*got);
      else for (const auto& p : req.collect) r->collected.push_back({p, "", "not collected: " + got.error().message});
    }
  }
  Touch(true);
  if (r.ok()) r->trust = "session";  // one trust domain: what ran before could shape this report
  return r;
}

Result<FileOpResult> Session::PutFile(const std::string& path, const std::string& data) {
  Touch(false);
  LSB_ASSIGN_OR_RETURN(PythonDriver * d, Driver());
  auto r = d->WriteFile(path, data);
  if (config_.language != "python") driver_.reset();  // the box is free for plain runs again
  Touch(false);
  return r;
}

Result<FileOpResult> Session::GetFile(const std::string& path, uint64_t max_bytes) {
  Touch(false);
  LSB_ASSIGN_OR_RETURN(PythonDriver * d, Driver());
  auto r = d->ReadFile(path, max_bytes);
  if (config_.language != "python") driver_.reset();
  Touch(false);
  return r;
}

Status Session::PutArchive(const UnpackedArchive& archive) {
  Touch(false);
  LSB_ASSIGN_OR_RETURN(PythonDriver * d, Driver());
  Status s = UnpackIntoBox(*d, archive);
  if (config_.language != "python") driver_.reset();
  Touch(false);
  return s;
}

Result<TreeArchive> Session::GetTree(const std::string& dir, const TreeLimits& limits) {
  Touch(false);
  LSB_ASSIGN_OR_RETURN(PythonDriver * d, Driver());
  auto t = TreeFromBox(*d, dir, limits);
  if (config_.language != "python") driver_.reset();
  Touch(false);
  return t;
}

SessionInfo Session::Info() const {
  SessionInfo i;
  i.id = id_;
  i.policy = policy_.name;
  i.language = config_.language;
  i.created_at = created_wall_;
  auto lifetime_end = created_wall_ + std::chrono::milliseconds(config_.max_lifetime_ms);
  std::lock_guard<std::mutex> lock(info_mu_);
  i.last_used_at = last_used_wall_;
  i.expires_at = std::min(lifetime_end, last_used_wall_ + std::chrono::milliseconds(config_.idle_timeout_ms));
  i.executions = executions_;
  if (closed_) {
    i.state = "closed";
  } else {
    i.state = busy_ ? "busy" : "ready";
  }
  return i;
}

void Session::SetBusy(bool busy) {
  std::lock_guard<std::mutex> lock(info_mu_);
  busy_ = busy;
}

bool Session::Expired(SteadyClock::time_point now) const {
  std::lock_guard<std::mutex> lock(info_mu_);
  if (busy_) return now - created_ > std::chrono::milliseconds(config_.max_lifetime_ms);
  return now - last_used_ > std::chrono::milliseconds(config_.idle_timeout_ms) ||
         now - created_ > std::chrono::milliseconds(config_.max_lifetime_ms);
}

void Session::Close() {
  {
    std::lock_guard<std::mutex> lock(info_mu_);
    if (closed_) return;
    closed_ = true;
  }
  std::unique_lock<std::mutex> use(use_mu_, std::try_to_lock);
  if (!use.owns_lock()) {
    // An operation runs: kill the box so it ends now rather than at its timeout.
    if (box_) box_->box().Kill();
    use.lock();
  }
  driver_.reset();
  lease_.reset();
  if (box_) box_->Close();
  box_.reset();
}

}  // namespace lsb::sched
