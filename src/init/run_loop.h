// One run's poll loop (DESIGN §2), once the program is spawned: over the control stream, the
// program's stdout/stderr pipes, the seccomp listener, a signalfd for SIGCHLD and a timerfd for
// the wall timeout. Output is forwarded in whole lines up to the cap (output_coalescer.h); alerts
// go out as they happen, bounded (protocol/alert_coalescer.h); the run ends once every process
// of it is gone and its pipes are drained (leftovers are killed). Supervisor::Run prepares and
// spawns; this watches; the caller sends kExit.
#pragma once

#include <poll.h>
#include <sys/resource.h>

#include <cstdint>
#include <optional>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "init/file_watch.h"
#include "init/file_worker.h"
#include "init/notify_watch.h"
#include "init/output_coalescer.h"
#include "init/spawn.h"
#include "init/stream.h"
#include "protocol/alert_coalescer.h"
#include "protocol/messages.h"

namespace lsb::init {

// Status of a finished run, pure: what ExitReport.status/exit_code/signal say.
struct RunOutcome {
  bool exec_failed = false;
  int exec_errno = 0;
  bool timed_out = false;
  bool output_limited = false;
  bool killed_by_host = false;
  bool exited = false;   // main program reaped
  int wait_status = 0;
};
void FillStatus(const RunOutcome& o, protocol::ExitReport& r);

uint64_t MonotonicMs();

class RunLoop {
 public:
  // `start_ms` (MonotonicMs) and `before` (RUSAGE_CHILDREN) were taken just before the spawn;
  // `path` is what was executed, for the message when it could not be.
  RunLoop(Stream& stream, int signal_fd, const protocol::RunSpec& spec, Spawned child, WatchConfig watch,
          std::string path, uint64_t start_ms, const rusage& before);
  RunLoop(const RunLoop&) = delete;
  RunLoop& operator=(const RunLoop&) = delete;

  // Watches the run to its end; the report (status, usage) is for kExit. An error: the stream
  // broke (Error::Eof() when the host went away) or a kernel call failed; the run is killed.
  // A kShutdown during the run sets *shutdown.
  Result<protocol::ExitReport> Run(bool* shutdown);
  // kFileOp frames during the run are served as `who` (file_worker.h); without, they are refused.
  // kWatch/kUnwatch go to `watch`, whose watcher's pipe the loop polls too.
  void ServeFilesAs(WorkerIdentity who, FileWatch* watch = nullptr) {
    files_ = who;
    watch_files_ = watch;
  }

 private:
  // The fds of one poll round and where each one sits in `fds` (-1: not polled this round).
  struct PollSet {
    pollfd fds[10];
    int n = 0;
    int stream = -1, flush = -1, out = -1, err = -1, watch = -1, control = -1, sig = -1, timer = -1, to_stdin = -1;
    int side = -1;  // the file watcher's pipe (file_watch.h)
    bool out_pending = false, same_fd = false, read_output = false;
    int Add(int fd, short events);
    bool Ready(int i) const;
  };

  bool Finished();
  PollSet BuildPollSet();
  int WaitMs(uint64_t now) const;
  void FlushDue();
  Status Dispatch(const PollSet& ps);
  Status HandleFrames(bool* shutdown);

  void OnWatch(const PollSet& ps);
  void OnControl();
  void OnTimer();
  void OnStdinWritable();
  void PumpOutput(UniqueFd& fd, protocol::FrameType type, uint64_t& counter);
  void Reap();
  void KillAll();

  // An event the program caused: after the output printed before it, bounded by the coalescer.
  void Emit(protocol::Event ev);
  // The run's own outcome alerts (timeout, output cap): one each per run, always queued.
  void RaiseOutcome(protocol::AlertRule rule, const char* kind, std::string message);
  void SendSummaries();
  protocol::ExitReport Finish();

  Stream& stream_;
  const int sigfd_;
  const protocol::RunSpec& spec_;
  Spawned child_;
  NotifyWatch watch_;
  const std::string path_;
  const uint64_t start_ms_;
  const rusage before_;
  UniqueFd timer_;
  uint64_t grace_ms_ = 0;

  RunOutcome out_;
  protocol::ExitReport report_;
  uint64_t forwarded_ = 0, end_ms_ = 0, max_rss_kb_ = 0;
  bool killed_all_ = false, children_gone_ = false, stdin_eof_ = false;
  bool writer_busy_ = false;  // a partial line is held past its quiet: the program is runnable
  std::string stdin_pending_;
  // Alerts and trace events past the run's bound are counted, and sent as one summary per rule
  // every kSummaryEveryMs while it lasts and before kExit; so are those the output queue has no
  // room for.
  protocol::AlertCoalescer coalescer_{protocol::InitAlertBounds()};
  uint64_t last_summary_ms_;
  // Output goes out in whole lines; what is held goes first before any event, so an alert follows
  // the output printed before it.
  OutputCoalescer lines_;
  std::optional<WorkerIdentity> files_;
  FileWatch* watch_files_ = nullptr;
};

}  // namespace lsb::init
