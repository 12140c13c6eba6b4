#include "init/run_loop.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "init/diag.h"

namespace lsb::init {

using protocol::AlertRule;
using protocol::Event;
using protocol::ExecStatus;
using protocol::ExitReport;
using protocol::FrameType;

namespace {

constexpr uint64_t kSummaryEveryMs = 1000;

uint64_t TvMs(const timeval& tv) {
  return static_cast<uint64_t>(tv.tv_sec) * 1000 + static_cast<uint64_t>(tv.tv_usec) / 1000;
}

// Whether `pid` is running or waiting for a CPU (state R in /proc/PID/stat): more of what it is
// writing may be on its way.
bool Runnable(pid_t pid) {
  char path[48], buf[256];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  UniqueFd fd(::open(path, O_RDONLY | O_CLOEXEC));
  if (!fd) return false;
  ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* close = std::strrchr(buf, ')');  // "pid (comm) S ...": comm may hold spaces
  return close && close[1] == ' ' && close[2] == 'R';
}

void ArmTimer(int fd, uint64_t ms) {
  itimerspec its{};
  its.it_value.tv_sec = static_cast<time_t>(ms / 1000);
  its.it_value.tv_nsec = static_cast<long>(ms % 1000) * 1000000;
  ::timerfd_settime(fd, 0, &its, nullptr);
}

}  // namespace

uint64_t MonotonicMs() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

void FillStatus(const RunOutcome& o, ExitReport& r) {
  if (o.exited) {
    if (WIFEXITED(o.wait_status)) {
      r.exit_code = WEXITSTATUS(o.wait_status);
    } else if (WIFSIGNALED(o.wait_status)) {
      r.signal = WTERMSIG(o.wait_status);
      r.exit_code = 128 + r.signal;
    }
  }
  if (o.exec_failed) {
    r.status = (o.exec_errno == EACCES || o.exec_errno == EPERM) ? ExecStatus::kDenied : ExecStatus::kError;
    r.exit_code = o.exec_errno == ENOENT ? 127 : 126;
    r.signal = 0;
  } else if (o.timed_out) {
    // One convention for every front end (protocol/messages.h); `signal` still says what ended it.
    r.status = ExecStatus::kTimeout;
    r.exit_code = protocol::kTimeoutExitCode;
  } else if (o.output_limited) {
    r.status = ExecStatus::kOutputLimit;
  } else if (o.killed_by_host || r.signal != 0) {
    r.status = ExecStatus::kKilled;
  } else {
    r.status = r.exit_code == 0 ? ExecStatus::kOk : ExecStatus::kError;
  }
}

RunLoop::RunLoop(Stream& stream, int signal_fd, const protocol::RunSpec& spec, Spawned child, WatchConfig watch,
                 std::string path, uint64_t start_ms, const rusage& before)
    : stream_(stream),
      sigfd_(signal_fd),
      spec_(spec),
      child_(std::move(child)),
      watch_(std::move(child_.listener), watch),
      path_(std::move(path)),
      start_ms_(start_ms),
      before_(before),
      timer_(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)),
      last_summary_ms_(start_ms),
      lines_([this](FrameType type, std::string_view data) {
        // Refused only once the program is killed and the host still does not read: its last
        // output is dropped, and flagged, rather than waited for.
        if (!stream_.Offer(type, data)) report_.truncated = true;
      }) {
  for (int fd : {child_.stdout_r.get(), child_.stderr_r.get(), child_.stdin_w.get()})
    if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  // At the timeout: SIGTERM to every process, then SIGKILL when this grace is over (the same timer).
  grace_ms_ = std::min({spec.timeout_grace_ms, spec.timeout_ms, protocol::kMaxTimeoutGraceMs});
}

Result<ExitReport> RunLoop::Run(bool* shutdown) {
  if (!timer_) {
    KillAll();
    return Error::FromErrno("timerfd_create");
  }
  ArmTimer(timer_.get(), spec_.timeout_ms ? spec_.timeout_ms : 1);
  for (;;) {
    // Frames that arrived with kCode (stdin, a quick kill) may already sit in the decoder.
    if (auto st = HandleFrames(shutdown); !st.ok()) {
      KillAll();
      return st.error();
    }
    if (Finished()) break;
    PollSet ps = BuildPollSet();
    int polled = ::poll(ps.fds, static_cast<nfds_t>(ps.n), WaitMs(MonotonicMs()));
    FlushDue();
    if (polled == 0) continue;
    if (polled < 0) {
      if (errno == EINTR) continue;
      KillAll();
      return Error::FromErrno("poll");
    }
    LSB_TRY(Dispatch(ps));
  }
  return Finish();
}

// Closes the program's stdin once all of it is written, kills what outlives the main program,
// reaps; true once nothing of the run is left to watch.
bool RunLoop::Finished() {
  if (stdin_eof_ && stdin_pending_.empty()) child_.stdin_w.reset();
  if (out_.exited && !killed_all_) KillAll();  // background leftovers do not outlive their run
  if (killed_all_) Reap();
  return killed_all_ && children_gone_ && !child_.stdout_r && !child_.stderr_r;
}

int RunLoop::PollSet::Add(int fd, short events) {
  if (fd < 0) return -1;
  fds[n] = {fd, events, 0};
  return n++;
}

bool RunLoop::PollSet::Ready(int i) const { return i >= 0 && (fds[i].revents & (fds[i].events | POLLHUP | POLLERR)); }

RunLoop::PollSet RunLoop::BuildPollSet() {
  PollSet ps;
  // Output to the host is written as it takes it; while too much waits, the program's pipes are
  // not read (it blocks on them), but everything else, the timer first, goes on. Once the run is
  // killed the pipes are drained regardless, so the run always ends.
  ps.out_pending = stream_.pending() > 0 && !stream_.broken();
  ps.same_fd = stream_.out_fd() == stream_.in_fd();
  ps.stream = ps.Add(stream_.in_fd(), static_cast<short>(POLLIN | (ps.out_pending && ps.same_fd ? POLLOUT : 0)));
  ps.flush = ps.out_pending && !ps.same_fd ? ps.Add(stream_.out_fd(), POLLOUT) : -1;
  ps.read_output = killed_all_ || !stream_.output_paused();
  ps.out = ps.read_output ? ps.Add(child_.stdout_r.get(), POLLIN) : -1;
  ps.err = ps.read_output ? ps.Add(child_.stderr_r.get(), POLLIN) : -1;
  ps.watch = ps.Add(watch_.fd(), POLLIN);
  ps.control = ps.Add(child_.control.get(), POLLIN);
  ps.sig = ps.Add(sigfd_, POLLIN);
  ps.timer = out_.exited ? -1 : ps.Add(timer_.get(), POLLIN);
  ps.to_stdin = stdin_pending_.empty() ? -1 : ps.Add(child_.stdin_w.get(), POLLOUT);
  ps.side = watch_files_ ? ps.Add(watch_files_->fd(), POLLIN) : -1;
  return ps;
}

// Until the next summary is due or a held line's quiet is over; -1: nothing is due.
int RunLoop::WaitMs(uint64_t now) const {
  int wait_ms = -1;
  auto wake_at = [&](uint64_t due) {
    int ms = due > now ? static_cast<int>(due - now) : 0;
    wait_ms = wait_ms < 0 ? ms : std::min(wait_ms, ms);
  };
  if (coalescer_.holding()) wake_at(last_summary_ms_ + kSummaryEveryMs);
  if (auto due = lines_.due_ms(writer_busy_)) wake_at(*due);
  return wait_ms;
}

// What a wait made due: held output whose quiet is over, the summaries of held-back alerts.
void RunLoop::FlushDue() {
  if (auto due = lines_.due_ms(writer_busy_); due && MonotonicMs() >= *due) {
    // The quiet is over; a writer that is only waiting for a CPU gets until the hold's end.
    writer_busy_ = !writer_busy_ && !out_.exited && Runnable(child_.pid);
    lines_.FlushIfDue(MonotonicMs(), writer_busy_);
  }
  if (lines_.held() == 0) writer_busy_ = false;
  if (coalescer_.holding() && MonotonicMs() >= last_summary_ms_ + kSummaryEveryMs) SendSummaries();
}

Status RunLoop::Dispatch(const PollSet& ps) {
  if (ps.out_pending && (ps.Ready(ps.flush) || (ps.same_fd && (ps.fds[ps.stream].revents & POLLOUT))))
    (void)stream_.Flush();
  if (ps.Ready(ps.watch)) OnWatch(ps);
  if (ps.Ready(ps.control)) OnControl();
  if (ps.Ready(ps.out)) PumpOutput(child_.stdout_r, FrameType::kStdout, report_.stdout_bytes);
  if (ps.Ready(ps.err)) PumpOutput(child_.stderr_r, FrameType::kStderr, report_.stderr_bytes);
  if (ps.Ready(ps.sig)) {
    signalfd_siginfo si[8];
    while (::read(sigfd_, si, sizeof si) > 0) {
    }
    Reap();
  }
  if (ps.Ready(ps.timer)) OnTimer();
  if (ps.Ready(ps.to_stdin)) OnStdinWritable();
  if (ps.Ready(ps.side)) watch_files_->OnReadable();
  if (ps.stream >= 0 && (ps.fds[ps.stream].revents & (POLLIN | POLLHUP | POLLERR))) {
    auto more = stream_.Pump();
    if (!more.ok() || !*more) {
      KillAll();  // the host is gone: nobody will read the result
      return Error::Eof();
    }
  }
  return OkStatus();
}

Status RunLoop::HandleFrames(bool* shutdown) {
  for (;;) {
    auto f = stream_.Next();
    if (!f.ok()) return f.error();
    if (!*f) return OkStatus();
    switch ((*f)->type) {
      case FrameType::kStdin:
        if (child_.stdin_w) stdin_pending_ += (*f)->payload;
        break;
      case FrameType::kStdinEof:
        stdin_eof_ = true;
        break;
      case FrameType::kShutdown:
        *shutdown = true;
        [[fallthrough]];
      case FrameType::kKill:
        if (!out_.timed_out && !out_.output_limited) out_.killed_by_host = !out_.exited;
        KillAll();
        break;
      case FrameType::kFileOp:
        if (!files_) return Error{"protocol: a file op during a run that serves none"};
        LSB_TRY(ServeFileOp(stream_, (*f)->payload, *files_));
        break;
      case FrameType::kWatch:
      case FrameType::kUnwatch:
        if (watch_files_ && files_) ServeWatchFrame(*watch_files_, **f, *files_);
        break;
      case FrameType::kPreempt:
        // The program decides what it means (a session's zygote: end the episode as a reset).
        if (!out_.exited && child_.pid > 0) ::kill(child_.pid, SIGUSR2);
        break;
      default:
        (void)stream_.SendJson(FrameType::kError,
                               protocol::InitError{protocol::ErrorStage::kProtocol,
                                                   std::string("unexpected frame during a run: ") +
                                                       protocol::FrameTypeName((*f)->type),
                                                   0});
    }
  }
}

void RunLoop::OnWatch(const PollSet& ps) {
  // What the program wrote before the call init is told about is in its pipes now: read it
  // first, so the alert follows it.
  if (ps.read_output && child_.stdout_r) PumpOutput(child_.stdout_r, FrameType::kStdout, report_.stdout_bytes);
  if (ps.read_output && child_.stderr_r) PumpOutput(child_.stderr_r, FrameType::kStderr, report_.stderr_bytes);
  if (!(ps.fds[ps.watch].revents & POLLIN)) {
    watch_.Close();  // POLLHUP: no process is left under the filter
    return;
  }
  auto st = watch_.HandleOne([this](Event ev) { Emit(std::move(ev)); });
  if (!st.ok()) Diag(st.error().message);
}

void RunLoop::OnControl() {
  int err = ReadExecOutcome(child_.control.get());
  if (err != 0) {
    out_.exec_failed = true;
    out_.exec_errno = err;
    std::string m = "llm-sandbox-init: cannot execute " + path_ + ": " + std::strerror(err) + "\n";
    lines_.Flush();
    (void)stream_.Send(FrameType::kStderr, m);
  }
  child_.control.reset();
}

void RunLoop::OnTimer() {
  uint64_t ticks;
  if (::read(timer_.get(), &ticks, sizeof ticks) < 0) ticks = 0;
  const bool first = !out_.timed_out && !out_.output_limited && !out_.killed_by_host && !out_.exited;
  if (first && grace_ms_ > 0) {
    // The program may still flush what it has (a test runner's summary); SIGKILL at the next tick.
    out_.timed_out = true;
    RaiseOutcome(AlertRule::kTimeout, "timeout",
                 "wall timeout of " + std::to_string(spec_.timeout_ms) + " ms: SIGTERM sent to every process, SIGKILL after " +
                     std::to_string(grace_ms_) + " ms");
    ::kill(-1, SIGTERM);  // every process of the box's pid namespace but init
    ArmTimer(timer_.get(), grace_ms_);
    return;
  }
  if (first) {
    out_.timed_out = true;
    RaiseOutcome(AlertRule::kTimeout, "timeout",
                 "wall timeout of " + std::to_string(spec_.timeout_ms) + " ms: every process killed");
  }
  KillAll();
}

void RunLoop::OnStdinWritable() {
  ssize_t n = ::write(child_.stdin_w.get(), stdin_pending_.data(), stdin_pending_.size());
  if (n > 0) {
    stdin_pending_.erase(0, static_cast<size_t>(n));
  } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
    stdin_pending_.clear();  // EPIPE: the program closed its stdin
    child_.stdin_w.reset();
  }
}

void RunLoop::PumpOutput(UniqueFd& fd, FrameType type, uint64_t& counter) {
  static char buf[kMaxDataChunk];
  ssize_t n = ::read(fd.get(), buf, sizeof buf);
  if (n < 0) {
    if (errno != EAGAIN && errno != EINTR) fd.reset();
    return;
  }
  if (n == 0) {
    fd.reset();
    return;
  }
  counter += static_cast<uint64_t>(n);
  uint64_t room = forwarded_ < spec_.output_limit_bytes ? spec_.output_limit_bytes - forwarded_ : 0;
  size_t fwd = static_cast<size_t>(std::min<uint64_t>(room, static_cast<uint64_t>(n)));
  if (fwd > 0) {
    lines_.Add(type, std::string_view(buf, fwd), MonotonicMs());
    forwarded_ += fwd;
  }
  if (fwd < static_cast<size_t>(n)) {
    report_.truncated = true;
    if (!out_.output_limited && !out_.timed_out && !out_.killed_by_host) {
      out_.output_limited = true;
      RaiseOutcome(AlertRule::kOutputFlood, "output_limit",
                   "output exceeded " + std::to_string(spec_.output_limit_bytes) +
                       " bytes: program killed, output truncated");
    }
    KillAll();
  }
}

void RunLoop::Reap() {
  for (;;) {
    int status;
    rusage ru{};
    pid_t pid = ::wait4(-1, &status, WNOHANG, &ru);
    if (pid > 0) {
      max_rss_kb_ = std::max<uint64_t>(max_rss_kb_, static_cast<uint64_t>(ru.ru_maxrss));
      if (pid == child_.pid) {
        out_.exited = true;
        out_.wait_status = status;
        end_ms_ = MonotonicMs();
      }
      continue;
    }
    if (pid < 0 && errno == EINTR) continue;
    children_gone_ = pid < 0 && errno == ECHILD;
    return;
  }
}

void RunLoop::KillAll() {
  // PID 1 of the box's pid namespace: -1 reaches every other process in it, trap '' TERM and
  // re-parented grandchildren included.
  if (!killed_all_) ::kill(-1, SIGKILL);
  killed_all_ = true;
}

void RunLoop::Emit(Event ev) {
  lines_.Flush();
  ev.time_ms = MonotonicMs() - start_ms_;
  if (!coalescer_.Admit(ev)) return;
  if (!stream_.OfferJson(FrameType::kEvent, ev)) coalescer_.Undelivered(ev);
}

void RunLoop::RaiseOutcome(AlertRule rule, const char* kind, std::string message) {
  Event ev = protocol::MakeAlert(rule, kind, std::move(message));
  ev.decision = "denied";
  lines_.Flush();
  ev.time_ms = MonotonicMs() - start_ms_;
  (void)stream_.SendJson(FrameType::kEvent, ev);  // a broken stream shows up as EOF on the read side
}

// What was held back goes out as summaries (the host sees the count as it grows; a session's
// executions get theirs). A summary the queue has no room for is held again.
void RunLoop::SendSummaries() {
  last_summary_ms_ = MonotonicMs();
  for (Event& s : coalescer_.TakeSummaries())
    if (!stream_.OfferJson(FrameType::kEvent, s)) coalescer_.Undelivered(s);
}

// The report of the finished run; the last summaries go out before it, always queued.
ExitReport RunLoop::Finish() {
  rusage after{};
  ::getrusage(RUSAGE_CHILDREN, &after);
  report_.cpu_ms = (TvMs(after.ru_utime) + TvMs(after.ru_stime)) - (TvMs(before_.ru_utime) + TvMs(before_.ru_stime));
  report_.max_rss_bytes = max_rss_kb_ * 1024;
  report_.duration_ms = (end_ms_ ? end_ms_ : MonotonicMs()) - start_ms_;
  lines_.Flush();
  FillStatus(out_, report_);
  for (const Event& summary : coalescer_.TakeSummaries()) (void)stream_.SendJson(FrameType::kEvent, summary);
  return report_;
}

}  // namespace lsb::init
