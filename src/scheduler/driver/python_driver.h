// The in-box Python driver: ONE long run of a small Python program (src/inbox/python_driver.py)
// whose stdin stays open: a session's persistent interpreter. Each execute's code is exec()'d in
// one globals dict, so variables survive; an exception prints its traceback to stderr and the
// driver goes on. Files are not its business: init's file worker carries every file operation out
// (runtime/box_files.h), for every policy, while this run stays alive.
// Wire (host -> driver, on stdin): first line the per-driver random marker; then messages
//   "X <ncode> <nstdin>\n" code stdin    execute
//   "O 0 0\n"                            the last execute's rich outputs (rich_outputs.h)
//   "N <nname> <op>\n"     name          the globals X runs in: op 0 select (created when new; status
//                                        3 past kMaxNamespaces), 1 delete, 2 empty again; "" is the
//                                        default namespace, the one every other caller uses
//   "S <ncode> <nroots>\n" code roots    first message only: run the setup code, then become a
//                                        zygote over the "\n"-joined writable roots (below)
//   "Z 0 0\n"                            zygote: reset to the zygote's state
//   "P 0 0\n"                            zygote: snapshot (this state becomes the reset's target)
// A zygote (session reset, docs/architecture.md) is the interpreter after its setup: it keeps the
// roots' files in its memory and forks one episode child at a time (and a spare, ahead) that
// serves the wire. Z: the episode exits, the zygote kills and reaps everything it left (it is a
// subreaper), puts the files back and lets the spare take over; P: the episode becomes a zygote
// itself. An episode that ends on its own takes the zygote down the same way (the run ends).
// After each message the driver writes "\x1e<marker>:<status>\n" to stdout and "\x1e<marker>\n" to
// stderr; the host splits both streams there (driver_wire.h, shared with the bash/sh/node drivers).
// Status: the exit code for X; for the others 0 ok, 3 past a bound, 4 another error (message on
// stderr).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "runtime/exec_result.h"
#include "runtime/interactive_run.h"
#include "runtime/runner.h"
#include "scheduler/driver/driver_wire.h"

namespace lsb::sched {

// The driver's Python source (kept here so the daemon needs no file next to it).
const std::string& PythonDriverSource();
// What the interpreter runs as `python -c`: the rich outputs, then the driver. Passed as an argument
// rather than a file so that a fork server's interpreter adopts the run (runtime/native/fork_server.h).
const std::string& PythonDriverProgram();

// Whether `policy` lets the driver run (a python language whose interpreter commands.allow lists);
// the error says what is missing. The Python session interpreter needs it.
Status CheckDriverSupported(const Policy& policy);

// The driver's wire codes (5 is taken by its reset mark).
enum class FileOpStatus { kOk = 0, kNotFound = 2, kTooLarge = 3, kFailed = 4 };

// Op N: separate globals in one interpreter (the E2B front door's code contexts).
enum class NamespaceOp { kSelect = 0, kDelete = 1, kRestart = 2 };
// The most namespaces one driver holds besides the default one (its own bound; callers keep theirs).
inline constexpr int kMaxNamespaces = 16;

struct FileOpResult {
  FileOpStatus status = FileOpStatus::kFailed;
  std::string data;     // O: the entries
  std::string message;  // why it failed, in the driver's words
};

// What makes a driver a zygote: the setup run once, and the writable paths a reset puts back.
struct ZygoteSpec {
  std::string setup;               // Python run before the first episode; "" = none
  std::vector<std::string> roots;  // absolute paths (the policy's tmpfs mounts)
};

class PythonDriver {
 public:
  // Starts the driver on `session`'s box with `lifetime_ms` as its whole-run wall limit. Fails when
  // the policy has no python language it may run. With `zygote`, the setup runs first (in the
  // policy's timeout) and `*setup` gets its result; a failed setup leaves a plain interpreter
  // (resettable() false) and the caller decides.
  static Result<std::unique_ptr<PythonDriver>> Start(BoxSession& session, uint64_t lifetime_ms,
                                                     const ZygoteSpec* zygote = nullptr,
                                                     ExecResult* setup = nullptr);
  ~PythonDriver();

  // Runs `code` in the persistent globals. On timeout or output cap the driver is killed (its
  // variables are lost): the result says so with an "interpreter_restarted" alert, alive() turns
  // false and the owner starts a new driver for the next call.
  // `live` gets the code's stdout/stderr as the driver writes them (the driver's stdout is
  // line-buffered), within the cap; the result still carries all of it.
  // `preempt` (a reset from another thread) turning true ends the code's episode: the zygote kills
  // it and puts the state back, and the result has status "reset" (a zygote only).
  Result<ExecResult> Execute(const std::string& code, const std::string& stdin_data, uint64_t timeout_ms,
                             uint64_t output_cap, const RunCallbacks* live = nullptr,
                             const std::atomic<bool>* preempt = nullptr);
  // Op N (above): kOk, or kTooLarge past kMaxNamespaces.
  Result<FileOpResult> Namespace(const std::string& name, NamespaceOp op);
  // An op whose answer is data (O above); `reply_cap` bounds what the driver may send back.
  Result<FileOpResult> RecordOp(char op, const std::string& first, const std::string& second,
                                uint64_t timeout_ms, uint64_t reply_cap);

  // Zygote operations (Z, P): kOk, or kFailed with the driver's words (a file it could not put
  // back, a snapshot it could not take). An error: the driver ended or did not answer in time.
  Result<FileOpResult> Reset(uint64_t timeout_ms) { return StateOp("Z", timeout_ms); }
  Result<FileOpResult> Snapshot(uint64_t timeout_ms) { return StateOp("P", timeout_ms); }
  // Whether this driver is a zygote whose Reset can work.
  bool resettable() const { return zygote_ && alive(); }

  // False once the driver run ended (killed, crashed, os._exit): start a new one.
  bool alive() const { return wire_ && wire_->alive(); }
  // Ends the driver (stdin EOF, then a kill if it lingers) and waits for its exit report.
  void Stop();

 private:
  explicit PythonDriver(BoxSession& s) : session_(s) {}
  Result<DriverReply> Send(const std::string& header, const std::string& a, const std::string& b,
                           uint64_t timeout_ms, uint64_t output_cap) {
    return wire_->Send(header, a, b, timeout_ms, output_cap);
  }
  // X and S: run code in the interpreter and report it as an execution.
  Result<ExecResult> RunCode(const std::string& header, const std::string& code, const std::string& b,
                             uint64_t timeout_ms, uint64_t output_cap, const RunCallbacks* live = nullptr,
                             const std::atomic<bool>* preempt = nullptr) {
    return wire_->RunCode(header, code, b, timeout_ms, output_cap, live, preempt, "interpreter");
  }
  Result<FileOpResult> StateOp(const char* op, uint64_t timeout_ms);

  BoxSession& session_;
  std::unique_ptr<DriverWire> wire_;  // the marker, the answers, each op's deadline and cap
  bool zygote_ = false;
};

}  // namespace lsb::sched
