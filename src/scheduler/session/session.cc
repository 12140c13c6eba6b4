#include "scheduler/session/session.h"

#include <algorithm>

#include "scheduler/driver/repl_messages.h"
#include "scheduler/sandbox_path.h"
#include "scheduler/session/session_pool.h"

namespace lsb::sched {

using SteadyClock = std::chrono::steady_clock;
using WallClock = std::chrono::system_clock;

namespace {

// An execution a reset ended without the zygote's answer (a plain run's box, or a box the reset
// killed when the zygote did not answer): status "reset", as a preempted episode's.
ExecResult PreemptedResult(const std::string& backend, const Result<ExecResult>& ran) {
  ExecResult r = ran.ok() ? *ran : ExecResult{};
  if (!ran.ok()) {
    r.execution_id = NewExecutionId();
    r.backend = backend;
  }
  r.status = ExecStatus::kReset;
  r.exit_code = 137;
  r.signal = 9;
  return r;
}

}  // namespace

Session::Use::Use(Session& s, Preempting, bool* preempted) : s_(s), lock_(s.use_mu_, std::defer_lock) {
  // A short holder that runs no program (a watch's drain, a file op) is waited for, not preempted.
  *preempted = !lock_.try_lock() && (s.executing_ || !lock_.try_lock_for(kUseWait));
  if (*preempted) {
    s.Preempt();
    if (!lock_.try_lock_for(kPreemptWait)) {
      // An execute that did not end (a zygote that did not answer): end its box. Another
      // operation ends within its own time limit.
      if (s.executing_ && s.box_) s.box_->box().Kill();
      lock_.lock();
    }
  }
  s_.preempt_ = false;
  s_.SetBusy(true);
}

void Session::Preempt() {
  preempt_ = true;
  if (plain_run_ && box_) box_->box().Kill();  // init's program is not the zygote: end the box
}

Session::Session(Backend& backend, BoxRegistry& registry, const Policy& policy, SessionConfig config,
                 std::string id)
    : backend_(backend),
      registry_(registry),
      policy_(policy),
      config_(std::move(config)),
      id_(std::move(id)),
      created_wall_(WallClock::now()),
      created_(SteadyClock::now()),
      repl_supported_(ReplDriverSupported(policy_, config_.language)),
      last_used_(created_),
      last_used_wall_(created_wall_),
      idle_timeout_ms_(config_.idle_timeout_ms),
      max_lifetime_ms_(config_.max_lifetime_ms) {}

Result<std::unique_ptr<Session>> Session::Open(Backend& backend, BoxRegistry& registry,
                                               const Policy& policy, SessionConfig config, std::string id) {
  if (config.language.empty()) config.language = policy.default_language;
  if (!policy.FindLanguage(config.language))
    return Error{"policy '" + policy.name + "' has no language '" + config.language + "'"};
  if (!config.setup.empty() && config.language != "python") {
    Error e{"setup: runs in a python session's interpreter; this session's language is " + config.language};
    e.code = ErrorCode::kInvalidArgument;
    e.field = "setup";
    return e;
  }
  std::unique_ptr<Session> s(new Session(backend, registry, policy, std::move(config), std::move(id)));
  LSB_TRY(s->OpenBox());
  return s;
}

bool Session::AdoptWarm() {
  SessionPool* pool = registry_.session_pool();
  if (!pool || config_.language != "python") return false;
  auto w = pool->Take(policy_, config_.setup, config_.owner);
  if (!w) return false;
  box_ = std::move(w->box);
  lease_ = std::make_unique<BoxRegistry::Lease>(registry_, box_.get());
  driver_ = std::move(w->driver);
  {
    std::lock_guard<std::mutex> lock(info_mu_);
    setup_ms_ = w->setup.duration_ms;
    warm_ = true;
  }
  setup_result_ = std::move(w->setup);
  baseline_ = true;
  return true;
}

Status Session::OpenBox() {
  if (watch_) {  // its events came from the box being replaced
    watch_->End("the session's box was replaced (a reset took a new box); watch again");
    watch_.reset();
  }
  if (AdoptWarm()) {
    TakeChangesBase();
    return OkStatus();
  }
  {
    std::lock_guard<std::mutex> lock(info_mu_);
    warm_ = false;
  }
  SessionOptions opts;
  opts.owner = config_.owner;  // a fork server's box comes from this owner's zygote only
  LSB_ASSIGN_OR_RETURN(box_, BoxSession::Open(backend_, policy_, opts));
  lease_ = std::make_unique<BoxRegistry::Lease>(registry_, box_.get());
  // Start the interpreter now, so the first execute pays only for its own code.
  if (config_.language == "python") LSB_TRY(StartDriver());
  baseline_ = true;
  TakeChangesBase();
  return OkStatus();
}

void Session::TakeChangesBase() {
  if (!config_.changes) return;
  changes_base_.reset();
  auto box = LiveBox();
  if (!box.ok()) {
    changes_error_ = box.error().message;
    return;
  }
  auto m = ManifestFromBox(**box, WritableDirs(policy_), ChangesLimits{});
  if (m.ok()) changes_base_ = std::move(*m);
  else changes_error_ = m.error().message;
}

void Session::AbsorbUpload(const std::vector<std::string>& paths) {
  if (!config_.changes || !changes_base_) return;
  auto box = LiveBox();
  auto now = box.ok() ? ManifestFromBox(**box, WritableDirs(policy_), ChangesLimits{}) : Result<Manifest>(box.error());
  if (!now.ok()) {
    changes_base_.reset();  // no honest baseline is left: Changes says why
    changes_error_ = "after an upload: " + now.error().message;
    return;
  }
  // The uploaded paths, and the directories the upload made on the way, now count as they are;
  // what the programs changed before stays a change.
  for (const std::string& p : paths) {
    for (size_t at = p.find('/', 1); at != std::string::npos; at = p.find('/', at + 1)) {
      std::string dir = p.substr(0, at);
      if (!changes_base_->count(dir) && now->count(dir)) (*changes_base_)[dir] = now->at(dir);
    }
    if (auto it = now->find(p); it != now->end()) (*changes_base_)[p] = it->second;
    else changes_base_->erase(p);
  }
}

Result<nlohmann::json> Session::Changes(const std::string& dir, const std::vector<std::string>& ignore) {
  if (!config_.changes)
    return Error{ErrorCode::kInvalidArgument,
                 "changes: this session keeps no baseline; create it with \"changes\": true (POST /v1/sessions)"};
  Touch(false);
  if (!changes_base_) return Error{"changes: no baseline was taken: " + changes_error_};
  std::vector<std::string> roots = dir.empty() ? WritableDirs(policy_) : std::vector<std::string>{dir};
  LSB_ASSIGN_OR_RETURN(BoxSession * box, LiveBox());
  auto now = ManifestFromBox(*box, roots, ChangesLimits{});
  Touch(false);
  if (!now.ok()) return now.error();
  Manifest before;
  for (const auto& [path, e] : *changes_base_) {
    bool inside = dir.empty() || (path.size() > dir.size() && path.compare(0, dir.size() + 1, dir + "/") == 0);
    if (inside) before.emplace(path, e);
  }
  const std::string root = dir.empty() ? "/" : dir;
  return DiffManifests(WithoutIgnored(before, root, ignore), WithoutIgnored(*now, root, ignore), root, ChangesLimits{});
}

Status Session::StartDriver() {
  ZygoteSpec zygote;
  zygote.setup = config_.setup;
  for (const auto& t : policy_.tmpfs) zygote.roots.push_back(t.path);
  ExecResult setup;
  LSB_ASSIGN_OR_RETURN(driver_, PythonDriver::Start(*box_, RemainingLifetimeMs(), &zygote, &setup));
  if (setup.status != ExecStatus::kOk && !config_.setup.empty()) {
    Error e{"setup: the setup code failed (" + std::string(protocol::Name(setup.status)) + ", exit " +
            std::to_string(setup.exit_code) + "): " + setup.stderr_data.substr(0, 2000)};
    e.code = ErrorCode::kInvalidArgument;
    e.field = "setup";
    return e;
  }
  if (setup.status != ExecStatus::kOk) return Error{"the session's interpreter did not start: " + setup.stderr_data};
  {
    std::lock_guard<std::mutex> lock(info_mu_);
    setup_ms_ = setup.duration_ms;
  }
  setup_result_ = std::move(setup);
  return OkStatus();
}

Session::~Session() { Close(); }

uint64_t Session::RemainingLifetimeMs() const {
  auto used = std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - created_).count();
  uint64_t u = used > 0 ? static_cast<uint64_t>(used) : 0;
  uint64_t lifetime;
  {
    std::lock_guard<std::mutex> lock(info_mu_);
    lifetime = max_lifetime_ms_;
  }
  return u >= lifetime ? 1000 : lifetime - u + 1000;
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
  if (config_.language != "python") return Error{"session " + id_ + " has no python interpreter"};
  if (!driver_ || !driver_->alive()) {
    driver_.reset();
    baseline_ = false;  // the new zygote takes the files as they are now, not as they were
    LSB_TRY(StartDriver());
  }
  return driver_.get();
}

bool Session::RunsInRepl(const ExecRequest& req) const {
  if (!repl_supported_ || (!req.language.empty() && req.language != config_.language)) return false;
  if (req.command.empty()) return true;
  return config_.language != "node" && req.env.empty();  // a command's env: a plain run has it
}

void Session::StopRepl(const std::string& why) {
  if (!repl_) return;
  if (repl_->alive()) {
    repl_->Stop();
    repl_lost_ = why;
  }
  repl_.reset();
}

Result<ExecResult> Session::ExecuteInRepl(const ExecRequest& req, const RunCallbacks& cb) {
  if (!box_ || !box_->usable())
    return Error{"session " + id_ + "'s box was killed or broke; delete it and create a new session"};
  if (!repl_ || !repl_->alive()) {
    repl_.reset();
    LSB_ASSIGN_OR_RETURN(repl_, ReplDriver::Start(*box_, config_.language, RemainingLifetimeMs()));
  }
  uint64_t timeout = req.timeout_ms ? std::min(*req.timeout_ms, policy_.timeout_ms) : policy_.timeout_ms;
  std::string code = req.command.empty() ? req.code : ShellCommandLine(req.command);
  plain_run_ = true;  // not a zygote: a reset ends it by killing the box
  Result<ExecResult> r = Error{"a reset was waiting"};
  if (!preempt_) r = repl_->Execute(code, req.stdin_data.value_or(""), timeout, policy_.output_bytes, &cb);
  plain_run_ = false;
  if (r.ok() && !repl_lost_.empty()) {
    r->alerts.insert(r->alerts.begin(), RestartAlert("this execution runs in a fresh " + repl_->what() + " (" +
                                                     repl_lost_ + "): variables and functions are lost, files are kept",
                                                     0));
  }
  repl_lost_.clear();
  return r;
}

Result<ExecResult> Session::Execute(const ExecRequest& req, const CollectLimits& collect, const OutputsLimits& outputs,
                                    const RunCallbacks& cb) {
  Touch(false);
  executing_ = true;
  struct Done {
    std::atomic<bool>& flag;
    ~Done() { flag = false; }
  } done{executing_};
  std::string lang = req.language.empty() ? config_.language : req.language;
  Result<ExecResult> r = Error{""};
  if (preempt_) {
    r = PreemptedResult(backend_.name(), Error{"a reset was waiting"});  // never started
  } else if (RunsInInterpreter(req)) {
    LSB_ASSIGN_OR_RETURN(PythonDriver * d, Driver());
    uint64_t timeout = req.timeout_ms ? std::min(*req.timeout_ms, policy_.timeout_ms) : policy_.timeout_ms;
    if (!req.context.empty()) {
      LSB_ASSIGN_OR_RETURN(FileOpResult sel, d->Namespace(req.context, NamespaceOp::kSelect));
      if (sel.status != FileOpStatus::kOk) return Error{"context '" + req.context + "': " + sel.message};
    }
    r = d->Execute(req.code, req.stdin_data.value_or(""), timeout, policy_.output_bytes, &cb, &preempt_);
    if (!req.context.empty() && d->alive()) (void)d->Namespace("", NamespaceOp::kSelect);  // back to the session's own
    if (r.ok() && d->alive()) {  // the entries are taken even when not wanted: none linger
      ExecResult got;
      Status s = TakeDriverOutputs(*d, outputs, got);
      if (req.outputs) r->outputs = s.ok() ? std::move(got.outputs) : std::vector<nlohmann::json>{{{"error", s.error().message}}};
    }
  } else if (RunsInRepl(req)) {
    r = ExecuteInRepl(req, cb);
  } else {
    if (!box_ || !box_->usable())
      return Error{"session " + id_ + "'s box was killed or broke; delete it and create a new session"};
    if (driver_ && driver_->alive()) driver_->Stop();  // init runs one program at a time
    StopRepl("a plain run (a command, or another language) ran in the box in between");
    ExecRequest one = req;
    one.language = lang;
    plain_run_ = true;
    if (!preempt_) r = box_->Run(one, cb);  // else a reset came in between: do not start
    plain_run_ = false;
  }
  // A reset ended it, or the box a reset killed took the run along: say so, not killed or an error.
  if (preempt_ && (!r.ok() || r->status == ExecStatus::kKilled)) r = PreemptedResult(backend_.name(), r);
  if (r.ok() && !req.collect.empty()) {
    if (!box_->usable()) {
      for (const auto& p : req.collect) r->collected.push_back({p, "", "not collected: the session's box ended with the program"});
    } else {
      auto got = CollectFromBox(*box_, req.collect, collect);
      if (got.ok()) r->collected = std::move(*got);
      else for (const auto& p : req.collect) r->collected.push_back({p, "", "not collected: " + got.error().message});
    }
  }
  Touch(true);
  if (r.ok()) r->trust = "session";  // one trust domain: what ran before could shape this report
  return r;
}

Result<FileOpResult> Session::Namespace(const std::string& name, NamespaceOp op) {
  if (!RunsInInterpreter("")) return Error{"session " + id_ + " has no python interpreter"};
  Touch(false);
  LSB_ASSIGN_OR_RETURN(PythonDriver * d, Driver());
  return d->Namespace(name, op);
}

Result<BoxSession*> Session::LiveBox() {
  if (!box_ || !box_->usable())
    return Error{"session " + id_ + "'s box was killed or broke; delete it and create a new session"};
  return box_.get();
}

Result<FileCall> Session::Files(const protocol::FileOp& op, std::string_view input) {
  Touch(false);
  LSB_ASSIGN_OR_RETURN(BoxSession * box, LiveBox());
  auto r = CallFileOp(*box, op, input);
  Touch(false);
  return r;
}

void WatchFeed::Push(protocol::FileEvent e) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_) return;
  if (events_.size() >= kMaxQueued) {
    events_.pop_front();
    ++dropped_;
  }
  events_.push_back(std::move(e));
}

std::vector<protocol::FileEvent> WatchFeed::Take(uint64_t* dropped) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<protocol::FileEvent> out(events_.begin(), events_.end());
  events_.clear();
  *dropped = dropped_;
  dropped_ = 0;
  return out;
}

void WatchFeed::End(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_) return;
  events_.push_back({why, "end", true});
  ended_ = true;
}

bool WatchFeed::ended() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ended_;
}

Result<std::shared_ptr<WatchFeed>> Session::Watch(const protocol::WatchSpec& spec) {
  Touch(false);
  LSB_ASSIGN_OR_RETURN(BoxSession * box, LiveBox());
  if (watch_) watch_->End("another watch of this session replaced this one");
  watch_ = std::make_shared<WatchFeed>();
  box->SetFileEventSink([feed = std::weak_ptr<WatchFeed>(watch_)](const protocol::FileEvent& e) {
    if (auto f = feed.lock()) {
      f->Push(e);
      if (e.op == "end") f->End(e.path);
    }
  });
  LSB_TRY(WatchBox(*box, &spec));
  return watch_;
}

void Session::Unwatch(const std::shared_ptr<WatchFeed>& feed) {
  if (!feed || feed != watch_) return;
  watch_.reset();
  if (box_ && box_->usable()) (void)WatchBox(*box_, nullptr);
}

Status Session::PollWatch(std::chrono::milliseconds within) {
  if (!box_ || !box_->usable()) return OkStatus();
  return DrainFileEvents(*box_, within);
}

Result<FileCall> Session::PutFile(const std::string& path, const std::string& data) {
  Touch(false);
  LSB_ASSIGN_OR_RETURN(BoxSession * box, LiveBox());
  auto r = WriteBoxFile(*box, path, data);
  if (r.ok() && r->reply.status == protocol::FileStatus::kOk) AbsorbUpload({path});  // an upload is no change
  Touch(false);
  return r;
}

Result<FileCall> Session::GetFile(const std::string& path, uint64_t max_bytes) {
  Touch(false);
  LSB_ASSIGN_OR_RETURN(BoxSession * box, LiveBox());
  auto r = ReadBoxFile(*box, path, max_bytes);
  Touch(false);
  return r;
}

Status Session::PutArchive(const UnpackedArchive& archive) {
  Touch(false);
  LSB_ASSIGN_OR_RETURN(BoxSession * box, LiveBox());
  Status s = UnpackIntoBox(*box, archive);
  if (s.ok()) {  // an upload is no change
    std::vector<std::string> paths;
    for (const auto& item : archive.items) paths.push_back(item.path);
    AbsorbUpload(paths);
  }
  Touch(false);
  return s;
}

Result<TreeArchive> Session::GetTree(const std::string& dir, const TreeLimits& limits) {
  Touch(false);
  LSB_ASSIGN_OR_RETURN(BoxSession * box, LiveBox());
  auto t = TreeFromBox(*box, dir, limits);
  Touch(false);
  return t;
}

Result<ResetReport> Session::Reset() {
  Touch(false);
  auto start = SteadyClock::now();
  ResetReport report;
  if (repl_supported_) {
    report.why = "a " + config_.language + " session's " + ReplDriverNoun(config_.language) +
                 " cannot be forked: a new box (a fresh one, the files as at creation) is its reset";
  } else if (config_.language != "python") {
    report.why = "a " + config_.language + " session has no interpreter to fork";
  } else if (!box_ || !box_->usable()) {
    report.why = "the box was killed or broke";
  } else if (!driver_ || !driver_->alive()) {
    report.why = "the interpreter ended since the last snapshot (a timeout, os._exit, a crash)";
  } else if (!baseline_) {
    report.why = "the interpreter was restarted since the last snapshot";
  } else if (!driver_->resettable()) {
    report.why = "the interpreter cannot fork episodes";
  } else {
    auto r = driver_->Reset(policy_.timeout_ms);
    if (r.ok() && r->status == FileOpStatus::kOk) report.mode = "interpreter";
    else report.why = r.ok() ? r->message : r.error().message;
  }
  if (report.mode.empty()) {
    // The slow path, still exact: a new box is the state right after creation.
    report.mode = "new_box";
    report.snapshot_lost = snapshots_ > 0;
    repl_.reset();
    repl_lost_.clear();  // a new box is expected to start afresh
    driver_.reset();
    lease_.reset();
    if (box_) box_->Close();
    box_.reset();
    {
      std::lock_guard<std::mutex> lock(info_mu_);
      snapshots_ = 0;
    }
    LSB_TRY(OpenBox());
  }
  auto took = SteadyClock::now() - start;
  report.duration_us = std::chrono::duration<double, std::micro>(took).count();
  report.duration_ms = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count());
  {
    std::lock_guard<std::mutex> lock(info_mu_);
    ++resets_;
  }
  Touch(false);
  return report;
}

Status Session::Snapshot() {
  Touch(false);
  auto refuse = [](std::string why) {
    Error e{std::move(why)};
    e.code = ErrorCode::kInvalidArgument;
    return e;
  };
  if (config_.language != "python")
    return refuse("a snapshot keeps a python session's interpreter; this session's language is " + config_.language +
                  " (reset still returns it to a new box)");
  if (snapshots_ >= kMaxSessionSnapshots)
    return refuse("the session holds its maximum of " + std::to_string(kMaxSessionSnapshots) +
                  " snapshots; create a new session");
  LSB_ASSIGN_OR_RETURN(PythonDriver * d, Driver());
  if (!d->resettable()) return Error{"the session's interpreter cannot take a snapshot"};
  LSB_ASSIGN_OR_RETURN(FileOpResult r, d->Snapshot(policy_.timeout_ms));
  if (r.status != FileOpStatus::kOk) return Error{"the snapshot failed: " + r.message};
  baseline_ = true;
  {
    std::lock_guard<std::mutex> lock(info_mu_);
    ++snapshots_;
  }
  Touch(false);
  return OkStatus();
}

SessionInfo Session::Info() const {
  SessionInfo i;
  i.id = id_;
  i.policy = policy_.name;
  i.language = config_.language;
  i.created_at = created_wall_;
  std::lock_guard<std::mutex> lock(info_mu_);
  auto lifetime_end = created_wall_ + std::chrono::milliseconds(max_lifetime_ms_);
  i.last_used_at = last_used_wall_;
  i.expires_at = std::min(lifetime_end, last_used_wall_ + std::chrono::milliseconds(idle_timeout_ms_));
  i.executions = executions_;
  i.resets = resets_;
  i.snapshots = snapshots_;
  i.setup_ms = setup_ms_;
  i.warm = warm_;
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

void Session::SetDeadline(uint64_t from_now_ms) {
  std::lock_guard<std::mutex> lock(info_mu_);
  auto age = std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - created_).count();
  max_lifetime_ms_ = static_cast<uint64_t>(age > 0 ? age : 0) + from_now_ms;
  // Idle no longer ends it earlier: the deadline alone does (last use is never in the future).
  idle_timeout_ms_ = max_lifetime_ms_;
}

bool Session::Expired(SteadyClock::time_point now) const {
  std::lock_guard<std::mutex> lock(info_mu_);
  if (busy_) return now - created_ > std::chrono::milliseconds(max_lifetime_ms_);
  return now - last_used_ > std::chrono::milliseconds(idle_timeout_ms_) ||
         now - created_ > std::chrono::milliseconds(max_lifetime_ms_);
}

void Session::Close() {
  {
    std::lock_guard<std::mutex> lock(info_mu_);
    if (closed_) return;
    closed_ = true;
  }
  std::unique_lock<std::timed_mutex> use(use_mu_, std::try_to_lock);
  if (!use.owns_lock()) {
    // An operation runs: kill the box so it ends now rather than at its timeout.
    if (box_) box_->box().Kill();
    use.lock();
  }
  repl_.reset();
  driver_.reset();
  lease_.reset();
  if (box_) box_->Close();
  box_.reset();
}

}  // namespace lsb::sched
