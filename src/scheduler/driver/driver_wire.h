// The transport every in-box session driver shares (python_driver.h, repl_driver.h): ONE long run
// on a session's box whose stdin stays open; the host writes a per-driver random marker line first,
// then one message per operation, and the driver answers each with "\x1e<marker>:<status>\n" on
// stdout and "\x1e<marker>\n" on stderr. Everything before the two marks is the operation's output.
// Each operation has its own deadline and output cap: past either the run is killed, alive() turns
// false and the owner starts a new driver for the next operation.
// A zygote driver (python) may also answer "\x1e<marker>:reset\n" on both streams: a fresh episode
// took over (see PythonDriver).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "runtime/exec_result.h"
#include "runtime/interactive_run.h"
#include "runtime/runner.h"

namespace lsb::sched {

// What one operation got back.
struct DriverReply {
  std::string out, err;
  int status = -1;
  bool deadline = false;      // the op's time ran out: the run was killed
  bool over_cap = false;      // output past the cap: the run was killed
  bool run_ended = false;     // the driver exited before replying
  bool reset = false;         // a preempt ended the op's episode (a zygote's "reset" reply)
  protocol::ExitReport exit;  // when run_ended
  std::vector<protocol::Event> events;
};

class DriverWire {
 public:
  // Starts `spec` with `program` on `session`'s box and sends the marker line.
  static Result<std::unique_ptr<DriverWire>> Start(BoxSession& session, protocol::RunSpec spec,
                                                   std::string_view program);
  ~DriverWire();
  DriverWire(const DriverWire&) = delete;
  DriverWire& operator=(const DriverWire&) = delete;

  // Writes header, a and b, then reads the answer within `timeout_ms` and `output_cap`. `live` gets
  // the output as it comes (what is certainly before the marks). `preempt` turning true sends the
  // run a preempt (SIGUSR2) and waits for the reset mark.
  Result<DriverReply> Send(std::string_view header, std::string_view a, std::string_view b, uint64_t timeout_ms,
                           uint64_t output_cap, const RunCallbacks* live = nullptr,
                           const std::atomic<bool>* preempt = nullptr);
  // Send, reported as an execution of code. `what` names the driver in the restart alerts
  // ("interpreter", "shell").
  Result<ExecResult> RunCode(std::string_view header, std::string_view code, std::string_view b, uint64_t timeout_ms,
                             uint64_t output_cap, const RunCallbacks* live, const std::atomic<bool>* preempt,
                             const std::string& what);

  // False once the run ended (killed, crashed, exited): start a new driver.
  bool alive() const { return run_ && !run_->exited(); }
  // Ends the run (stdin EOF, then a kill if it lingers) and waits for its exit report.
  void Stop();

 private:
  explicit DriverWire(BoxSession& s) : session_(s) {}
  void WaitExit(std::chrono::milliseconds within);
  // Kills the run and waits for its end.
  void KillRun();

  BoxSession& session_;
  std::unique_ptr<InteractiveRun> run_;
  std::string marker_;
};

// An "interpreter_restarted" alert of a session ("session" is its source), at `time_ms`.
protocol::Event RestartAlert(const std::string& message, uint64_t time_ms);

// The status in an answer line's digits: hostile input (a session is one trust domain), so
// anything but a number 0..255 is 255. Pure.
int ParseAnswerStatus(std::string_view digits);

}  // namespace lsb::sched
