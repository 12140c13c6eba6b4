// The serve loop (DESIGN §2): after the view is built, init waits for kRun + kCode, starts the
// program confined (spawn.h), watches it (run_loop.h: stream, pipes, seccomp listener, SIGCHLD,
// wall timeout), and closes the run with kExit once every process of it is gone.
#pragma once

#include <map>
#include <memory>
#include <optional>

#include "base/result.h"
#include "init/adopt.h"
#include "init/exec_policy.h"
#include "init/file_watch.h"
#include "init/file_worker.h"
#include "init/run_loop.h"
#include "init/seccomp_filter.h"
#include "init/stream.h"
#include "protocol/messages.h"

namespace lsb::init {

class Supervisor {
 public:
  Supervisor(Stream& stream, int signal_fd, const protocol::BoxSetup& setup, const ExecPolicy& exec,
             int ruleset_fd)
      : stream_(stream), sigfd_(signal_fd), setup_(setup), exec_(exec), ruleset_fd_(ruleset_fd), file_watch_(stream) {
    stream_.SetSide(&file_watch_);
  }
  ~Supervisor() { stream_.SetSide(nullptr); }

  // Serves runs until kShutdown or the end of the stream (then everything is killed). Whenever no
  // frame comes for kIdleAfterMs, init gives back what it does not need while it waits
  // (idle_memory.h): a pooled or session box idles, a one-shot run never waits that long.
  Status Serve();
  static constexpr int kIdleAfterMs = 100;

  // Only in the weaker mode a policy accepted (BoxSetup.gvisor_accept_weaker): runs go without
  // the user-notification watch and/or the escape filter because the kernel cannot load them.
  void SetControls(bool watch, bool escape) {
    watch_ = watch;
    escape_ = escape;
  }
  // Programs compiled at setup for hand-off fd `nofile` (they must match SetControls and the
  // setup's trace flag): a run with that nofile does not compile them again.
  // A derived box of the fork server: the waiting program (adopt.h) the first adoptable run becomes.
  void SetAdoptee(Adoptee a) { adoptee_ = std::move(a); }
  void AddPrograms(uint64_t nofile, std::unique_ptr<SeccompPrograms> programs) {
    if (programs) programs_[nofile] = std::move(programs);
  }

 private:
  // Returns an error for kError{stage:"run"}; Error::Eof() (IsEof()) when the host went away mid-run.
  Status Run(const protocol::RunSpec& spec, const std::string& code, bool* shutdown);
  Status WriteProgram(const protocol::RunSpec& spec, const std::string& code);
  // How to spawn `spec`'s program: argv with {file}, env with PATH and HOME, this box's ids and
  // confinement.
  // The environment (the image's config under the policy's, checked again) and where argv[0] runs from.
  Result<SpawnParams> SpawnParamsFor(const protocol::RunSpec& spec, uint64_t nofile, const SeccompPrograms* programs) const;
  Result<const SeccompPrograms*> ProgramsFor(uint64_t nofile);
  // The run's program: spawned, adopted (a derived box's waiting copy) or the zygote's interpreter.
  Result<Spawned> Start(const SpawnParams& p);
  // Who the file worker runs as (file_worker.h): the program's ids, ruleset and escape filter.
  Result<WorkerIdentity> FileWorkerIdentity();

  Stream& stream_;
  int sigfd_;
  const protocol::BoxSetup& setup_;
  const ExecPolicy& exec_;
  int ruleset_fd_;
  bool watch_ = true;
  bool escape_ = true;
  std::map<uint64_t, std::unique_ptr<SeccompPrograms>> programs_;  // by hand-off fd number
  std::optional<Adoptee> adoptee_;
  bool zygote_started_ = false;
  std::vector<sock_filter> zygote_filter_;
  FileWatch file_watch_;  // kWatch: the box's file events (file_watch.h)
};

}  // namespace lsb::init
