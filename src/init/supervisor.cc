#include "init/supervisor.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/io.h"
#include "base/unique_fd.h"
#include "init/command_path.h"
#include "init/diag.h"
#include "init/image_config.h"
#include "init/idle_memory.h"
#include "init/output_coalescer.h"
#include "init/notify_watch.h"
#include "init/spawn.h"
#include "policy/env_rules.h"
#include "protocol/alert_coalescer.h"

namespace lsb::init {

using protocol::Event;
using protocol::ExitReport;
using protocol::FrameType;
using protocol::RunSpec;

namespace {

uint64_t NowMs() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

constexpr uint64_t kSummaryEveryMs = 1000;

uint64_t TvMs(const timeval& tv) {
  return static_cast<uint64_t>(tv.tv_sec) * 1000 + static_cast<uint64_t>(tv.tv_usec) / 1000;
}

std::string Substitute(std::string s, const std::string& file) {
  for (size_t at = s.find("{file}"); at != std::string::npos; at = s.find("{file}", at + file.size()))
    s.replace(at, 6, file);
  return s;
}

void SetNonBlocking(int fd) {
  if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
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
    r.status = (o.exec_errno == EACCES || o.exec_errno == EPERM) ? "denied" : "error";
    r.exit_code = o.exec_errno == ENOENT ? 127 : 126;
    r.signal = 0;
  } else if (o.timed_out) {
    // One convention for every front end (protocol/messages.h); `signal` still says what ended it.
    r.status = "timeout";
    r.exit_code = protocol::kTimeoutExitCode;
  } else if (o.output_limited) {
    r.status = "output_limit";
  } else if (o.killed_by_host) {
    r.status = "killed";
  } else if (r.signal != 0) {
    r.status = "killed";
  } else {
    r.status = r.exit_code == 0 ? "ok" : "error";
  }
}

Status Supervisor::Serve() {
  for (;;) {
    if (stream_.QuietFor(kIdleAfterMs)) ReleaseIdleMemory();
    auto f = stream_.Read();
    if (!f.ok()) {
      if (f.error().IsEof()) return OkStatus();
      return f.error();
    }
    switch (f->type) {
      case FrameType::kRun: {
        RunSpec spec;
        try {
          spec = protocol::ParseMessage<RunSpec>(f->payload);
        } catch (const std::exception& e) {
          LSB_TRY(stream_.SendJson(FrameType::kError, protocol::InitError{"protocol", std::string("bad RunSpec: ") + e.what(), 0}));
          break;
        }
        auto code = stream_.Read();
        if (!code.ok()) return code.error().IsEof() ? OkStatus() : code.error();
        if (code->type != FrameType::kCode) {
          LSB_TRY(stream_.SendJson(FrameType::kError, protocol::InitError{"protocol", "kRun must be followed by kCode", 0}));
          break;
        }
        bool shutdown = false;
        auto st = Run(spec, code->payload, &shutdown);
        if (!st.ok()) {
          if (st.error().IsEof()) return OkStatus();
          LSB_TRY(stream_.SendJson(FrameType::kError, protocol::InitError{"run", st.error().message, st.error().sys_errno}));
        }
        if (shutdown) return OkStatus();
        break;
      }
      case FrameType::kShutdown:
        return OkStatus();
      case FrameType::kKill:
      case FrameType::kStdin:
      case FrameType::kStdinEof:
        break;  // late frames for a run that already ended
      default:
        LSB_TRY(stream_.SendJson(FrameType::kError, protocol::InitError{"protocol", std::string("unexpected frame ") + protocol::FrameTypeName(f->type), 0}));
    }
  }
}

Status Supervisor::WriteProgram(const RunSpec& spec, const std::string& code) {
  const std::string& n = spec.file_name;
  if (n.empty() || n == "." || n == ".." || n.find('/') != std::string::npos || n.find('\0') != std::string::npos)
    return Error{"file_name must be a plain file name: \"" + n + "\""};
  if (DIR* d = ::opendir(setup_.job_dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string old = e->d_name;
      if (old != "." && old != "..") ::unlink((setup_.job_dir + "/" + old).c_str());
    }
    ::closedir(d);
  }
  std::string path = setup_.job_dir + "/" + n;
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444));
  if (!fd) return Error::FromErrno("write the program to " + path);
  return WriteAll(fd.get(), code);
}

Result<const SeccompPrograms*> Supervisor::ProgramsFor(uint64_t nofile) {
  auto& slot = programs_[nofile];
  if (!slot) {
    // Trace mode adds file opens to the watch; without the watch, escape calls stay plain EPERM.
    LSB_ASSIGN_OR_RETURN(SeccompPrograms p, BuildSeccompPrograms(static_cast<int>(nofile), SeccompOptions{setup_.trace, watch_}));
    slot = std::make_unique<SeccompPrograms>(std::move(p));
  }
  return slot.get();
}

Status Supervisor::Run(const RunSpec& spec, const std::string& code, bool* shutdown) {
  if (spec.argv.empty()) return Error{"RunSpec.argv is empty"};
  // The host checked every source of this environment; checked again here, where it is used.
  LSB_TRY(env::CheckRunEnv(spec.env));
  LSB_TRY(WriteProgram(spec, code));
  LSB_ASSIGN_OR_RETURN(uint64_t nofile, CheckNofile(spec.nofile));
  LSB_ASSIGN_OR_RETURN(const SeccompPrograms* progs, ProgramsFor(nofile));

  const std::string file = setup_.job_dir + "/" + spec.file_name;
  SpawnParams p;
  for (const auto& a : spec.argv) p.argv.push_back(Substitute(a, file));
  const std::string workdir = RunWorkdir(spec.workdir, setup_.image_workdir);
  std::map<std::string, std::string> env =
      RunEnvironment(spec.env, setup_.image_env, workdir, [](const std::string& w) { Diag(w); });
  LSB_TRY(env::CheckRunEnv(env));
  for (const auto& [k, v] : env) p.env.push_back(k + "=" + v);
  // A bare name on the run's PATH; a path the image lacks by its name on the image's PATH, as
  // the allowlist was resolved (command_path.h), and argv[0] says where it runs from.
  if (p.argv[0].find('/') == std::string::npos) {
    p.path = FindOnPath(p.argv[0], env["PATH"]).value_or(p.argv[0]);
  } else {
    p.path = LocateCommand(p.argv[0], ImagePath(setup_.image_env)).value_or(p.argv[0]);
    p.argv[0] = p.path;
  }
  p.workdir = workdir;
  p.nofile = nofile;
  p.file_size = spec.file_size_bytes;
  p.uid = setup_.uid;
  p.gid = setup_.gid;
  p.stdin_pipe = spec.stdin_follows;
  p.ruleset_fd = ruleset_fd_;
  p.seccomp = progs;
  p.watch = watch_;
  p.escape = escape_;

  rusage before{};
  ::getrusage(RUSAGE_CHILDREN, &before);
  const uint64_t start = NowMs();
  LSB_ASSIGN_OR_RETURN(Spawned child, Spawn(p));
  SetNonBlocking(child.stdout_r.get());
  SetNonBlocking(child.stderr_r.get());
  SetNonBlocking(child.stdin_w.get());

  NotifyWatch watch(std::move(child.listener), WatchConfig{&exec_, setup_.network_enabled, setup_.trace});
  UniqueFd timer(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  if (!timer) return Error::FromErrno("timerfd_create");
  ArmTimer(timer.get(), spec.timeout_ms ? spec.timeout_ms : 1);
  // At the timeout: SIGTERM to every process, then SIGKILL when this grace is over (the same timer).
  const uint64_t grace_ms = std::min({spec.timeout_grace_ms, spec.timeout_ms, protocol::kMaxTimeoutGraceMs});

  RunOutcome out;
  ExitReport report;
  uint64_t forwarded = 0, end_ms = 0, max_rss_kb = 0;
  bool killed_all = false, children_gone = false, stdin_eof = false;
  bool writer_busy = false;  // a partial line is held past its quiet: the program is runnable
  std::string stdin_pending;

  // Alerts and trace events past the run's bound are counted, and sent as one summary per rule
  // before kExit (protocol/alert_coalescer.h); so are those the output queue has no room for.
  protocol::AlertCoalescer coalescer(protocol::InitAlertBounds());
  // Output goes out in whole lines (output_coalescer.h); what is held goes first before any event,
  // so an alert follows the output printed before it.
  OutputCoalescer lines([&](FrameType type, std::string_view data) {
    // Refused only once the program is killed and the host still does not read: its last
    // output is dropped, and flagged, rather than waited for.
    if (!stream_.Offer(type, data)) report.truncated = true;
  });
  auto emit = [&](Event ev) {
    lines.Flush();
    ev.time_ms = NowMs() - start;
    if (!coalescer.Admit(ev)) return;
    if (!stream_.OfferJson(FrameType::kEvent, ev)) coalescer.Undelivered(ev);
  };
  // What was held back goes out as summaries every second while it lasts (the host sees the
  // count as it grows; a session's executions get theirs), and before kExit. A summary the queue
  // has no room for is held again.
  uint64_t last_summary_ms = start;
  auto send_summaries = [&] {
    last_summary_ms = NowMs();
    for (Event& s : coalescer.TakeSummaries())
      if (!stream_.OfferJson(FrameType::kEvent, s)) coalescer.Undelivered(s);
  };
  // The run's own alerts (timeout, output cap): one each per run, always queued.
  auto emit_always = [&](Event ev) {
    lines.Flush();
    ev.time_ms = NowMs() - start;
    (void)stream_.SendJson(FrameType::kEvent, ev);  // a broken stream shows up as EOF on the read side
  };
  auto kill_all = [&] {
    // PID 1 of the box's pid namespace: -1 reaches every other process in it, trap '' TERM and
    // re-parented grandchildren included.
    if (!killed_all) ::kill(-1, SIGKILL);
    killed_all = true;
  };
  auto alert = [&](const char* kind, const char* rule, std::string msg) {
    Event ev;
    ev.kind = kind;
    ev.severity = "warning";
    ev.rule = rule;
    ev.message = std::move(msg);
    ev.decision = "denied";
    emit_always(std::move(ev));
  };
  auto reap = [&] {
    for (;;) {
      int status;
      rusage ru{};
      pid_t pid = ::wait4(-1, &status, WNOHANG, &ru);
      if (pid > 0) {
        max_rss_kb = std::max<uint64_t>(max_rss_kb, static_cast<uint64_t>(ru.ru_maxrss));
        if (pid == child.pid) {
          out.exited = true;
          out.wait_status = status;
          end_ms = NowMs();
        }
        continue;
      }
      if (pid < 0 && errno == EINTR) continue;
      children_gone = pid < 0 && errno == ECHILD;
      return;
    }
  };
  auto pump_output = [&](UniqueFd& fd, FrameType type, uint64_t& counter) {
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
    uint64_t room = forwarded < spec.output_limit_bytes ? spec.output_limit_bytes - forwarded : 0;
    size_t fwd = static_cast<size_t>(std::min<uint64_t>(room, static_cast<uint64_t>(n)));
    if (fwd > 0) {
      lines.Add(type, std::string_view(buf, fwd), NowMs());
      forwarded += fwd;
    }
    if (fwd < static_cast<size_t>(n)) {
      report.truncated = true;
      if (!out.output_limited && !out.timed_out && !out.killed_by_host) {
        out.output_limited = true;
        alert("output_limit", "output_flood",
              "output exceeded " + std::to_string(spec.output_limit_bytes) + " bytes: program killed, output truncated");
      }
      kill_all();
    }
  };

  // Frames that arrived with kCode (stdin, a quick kill) may already sit in the decoder.
  auto handle_frames = [&]() -> Status {
    for (;;) {
      auto f = stream_.Next();
      if (!f.ok()) return f.error();
      if (!*f) return OkStatus();
      switch ((*f)->type) {
        case FrameType::kStdin:
          if (child.stdin_w) stdin_pending += (*f)->payload;
          break;
        case FrameType::kStdinEof:
          stdin_eof = true;
          break;
        case FrameType::kShutdown:
          *shutdown = true;
          [[fallthrough]];
        case FrameType::kKill:
          if (!out.timed_out && !out.output_limited) out.killed_by_host = !out.exited;
          kill_all();
          break;
        default:
          (void)stream_.SendJson(FrameType::kError, protocol::InitError{"protocol", std::string("unexpected frame during a run: ") + protocol::FrameTypeName((*f)->type), 0});
      }
    }
  };

  for (;;) {
    if (auto st = handle_frames(); !st.ok()) {
      kill_all();
      return st.error();
    }
    if (stdin_eof && stdin_pending.empty()) child.stdin_w.reset();
    if (out.exited && !killed_all) kill_all();  // background leftovers do not outlive their run
    if (killed_all) reap();
    if (killed_all && children_gone && !child.stdout_r && !child.stderr_r) break;

    pollfd fds[9];
    int nfds = 0;
    auto add = [&](int fd, short ev) -> int {
      if (fd < 0) return -1;
      fds[nfds] = {fd, ev, 0};
      return nfds++;
    };
    // Output to the host is written as it takes it; while too much waits, the program's pipes
    // are not read (it blocks on them), but everything else, the timer first, goes on. Once the
    // run is killed the pipes are drained regardless, so the run always ends.
    bool out_pending = stream_.pending() > 0 && !stream_.broken();
    bool same_fd = stream_.out_fd() == stream_.in_fd();
    int i_stream = add(stream_.in_fd(), static_cast<short>(POLLIN | (out_pending && same_fd ? POLLOUT : 0)));
    int i_flush = out_pending && !same_fd ? add(stream_.out_fd(), POLLOUT) : -1;
    bool read_output = killed_all || !stream_.output_paused();
    int i_out = read_output ? add(child.stdout_r.get(), POLLIN) : -1;
    int i_err = read_output ? add(child.stderr_r.get(), POLLIN) : -1;
    int i_watch = add(watch.fd(), POLLIN);
    int i_ctl = add(child.control.get(), POLLIN);
    int i_sig = add(sigfd_, POLLIN);
    int i_timer = out.exited ? -1 : add(timer.get(), POLLIN);
    int i_stdin = stdin_pending.empty() ? -1 : add(child.stdin_w.get(), POLLOUT);
    int wait_ms = -1;
    auto wake_at = [&](uint64_t due) {
      uint64_t now = NowMs();
      int ms = due > now ? static_cast<int>(due - now) : 0;
      wait_ms = wait_ms < 0 ? ms : std::min(wait_ms, ms);
    };
    if (coalescer.holding()) wake_at(last_summary_ms + kSummaryEveryMs);
    if (auto due = lines.due_ms(writer_busy)) wake_at(*due);
    int polled = ::poll(fds, static_cast<nfds_t>(nfds), wait_ms);
    if (auto due = lines.due_ms(writer_busy); due && NowMs() >= *due) {
      // The quiet is over; a writer that is only waiting for a CPU gets until the hold's end.
      writer_busy = !writer_busy && !out.exited && Runnable(child.pid);
      lines.FlushIfDue(NowMs(), writer_busy);
    }
    if (lines.held() == 0) writer_busy = false;
    if (coalescer.holding() && NowMs() >= last_summary_ms + kSummaryEveryMs) send_summaries();
    if (polled == 0) continue;
    if (polled < 0) {
      if (errno == EINTR) continue;
      kill_all();
      return Error::FromErrno("poll");
    }
    auto ready = [&](int i) { return i >= 0 && (fds[i].revents & (fds[i].events | POLLHUP | POLLERR)); };

    if (out_pending && (ready(i_flush) || (same_fd && (fds[i_stream].revents & POLLOUT)))) (void)stream_.Flush();
    if (ready(i_watch)) {
      // What the program wrote before the call init is told about is in its pipes now: read it
      // first, so the alert follows it.
      if (read_output && child.stdout_r) pump_output(child.stdout_r, FrameType::kStdout, report.stdout_bytes);
      if (read_output && child.stderr_r) pump_output(child.stderr_r, FrameType::kStderr, report.stderr_bytes);
      if (fds[i_watch].revents & POLLIN) {
        auto st = watch.HandleOne(emit);
        if (!st.ok()) {
          Diag(st.error().message);
        }
      } else {
        watch.Close();  // POLLHUP: no process is left under the filter
      }
    }
    if (ready(i_ctl)) {
      int err = ReadExecOutcome(child.control.get());
      if (err != 0) {
        out.exec_failed = true;
        out.exec_errno = err;
        std::string m = "llm-sandbox-init: cannot execute " + p.path + ": " + std::strerror(err) + "\n";
        lines.Flush();
        (void)stream_.Send(FrameType::kStderr, m);
      }
      child.control.reset();
    }
    if (ready(i_out)) pump_output(child.stdout_r, FrameType::kStdout, report.stdout_bytes);
    if (ready(i_err)) pump_output(child.stderr_r, FrameType::kStderr, report.stderr_bytes);
    if (ready(i_sig)) {
      signalfd_siginfo si[8];
      while (::read(sigfd_, si, sizeof si) > 0) {
      }
      reap();
    }
    if (ready(i_timer)) {
      uint64_t ticks;
      if (::read(timer.get(), &ticks, sizeof ticks) < 0) ticks = 0;
      if (!out.timed_out && !out.output_limited && !out.killed_by_host && !out.exited && grace_ms > 0) {
        // The program may still flush what it has (a test runner's summary); SIGKILL at the next tick.
        out.timed_out = true;
        alert("timeout", "timeout",
              "wall timeout of " + std::to_string(spec.timeout_ms) + " ms: SIGTERM sent to every process, SIGKILL after " +
                  std::to_string(grace_ms) + " ms");
        ::kill(-1, SIGTERM);  // every process of the box's pid namespace but init
        ArmTimer(timer.get(), grace_ms);
      } else {
        if (!out.timed_out && !out.output_limited && !out.killed_by_host && !out.exited) {
          out.timed_out = true;
          alert("timeout", "timeout", "wall timeout of " + std::to_string(spec.timeout_ms) + " ms: every process killed");
        }
        kill_all();
      }
    }
    if (ready(i_stdin)) {
      ssize_t n = ::write(child.stdin_w.get(), stdin_pending.data(), stdin_pending.size());
      if (n > 0) {
        stdin_pending.erase(0, static_cast<size_t>(n));
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        stdin_pending.clear();  // EPIPE: the program closed its stdin
        child.stdin_w.reset();
      }
    }
    if (i_stream >= 0 && (fds[i_stream].revents & (POLLIN | POLLHUP | POLLERR))) {
      auto more = stream_.Pump();
      if (!more.ok() || !*more) {
        kill_all();  // the host is gone: nobody will read the result
        return Error::Eof();
      }
    }
  }

  rusage after{};
  ::getrusage(RUSAGE_CHILDREN, &after);
  report.cpu_ms = (TvMs(after.ru_utime) + TvMs(after.ru_stime)) - (TvMs(before.ru_utime) + TvMs(before.ru_stime));
  report.max_rss_bytes = max_rss_kb * 1024;
  report.duration_ms = (end_ms ? end_ms : NowMs()) - start;
  lines.Flush();
  FillStatus(out, report);
  for (const Event& summary : coalescer.TakeSummaries()) (void)stream_.SendJson(FrameType::kEvent, summary);
  return stream_.SendJson(FrameType::kExit, report);
}

}  // namespace lsb::init
