// A run whose stdin stays open and whose output is consumed piece by piece, on a BoxSession's box:
// the daemon's persistent session interpreters and file helpers are built on it. BoxSession::Run
// is the whole-run form; this is the streaming form of the same protocol (docs/protocol.md):
//   kRun(spec, stdin_follows) + kCode -> SendStdin()... -> Next() pieces -> kExit
// One InteractiveRun at a time per box, and no BoxSession::Run while it lives (init runs one
// program at a time). Not thread-safe: its owner serialises calls.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"
#include "protocol/messages.h"
#include "runtime/runner.h"

namespace lsb {

class InteractiveRun {
 public:
  using Clock = std::chrono::steady_clock;

  struct Piece {
    enum class Kind { kStdout, kStderr, kEvent, kExit, kDeadline };
    Kind kind = Kind::kDeadline;
    std::string data;              // kStdout / kStderr
    protocol::Event event;         // kEvent
    protocol::ExitReport exit;     // kExit: the run is over
  };

  // Starts `spec` (stdin_follows is forced on) with `code` as the program on `session`'s box.
  static Result<std::unique_ptr<InteractiveRun>> Start(BoxSession& session, protocol::RunSpec spec,
                                                       std::string_view code);
  ~InteractiveRun();
  InteractiveRun(const InteractiveRun&) = delete;
  InteractiveRun& operator=(const InteractiveRun&) = delete;

  // Queues bytes for the program's stdin; they are written while Next() waits.
  void SendStdin(std::string_view bytes);
  // Closes the program's stdin.
  void CloseStdin();
  // The next thing the run did, or Kind::kDeadline when `deadline` passed first. An Error means
  // the box broke (init died, protocol error): the session is marked unusable.
  Result<Piece> Next(Clock::time_point deadline);
  // Asks init to kill the run's processes; the run then ends with a kExit.
  void Kill();
  // Asks init to send SIGUSR2 to the run's first process (frame kPreempt); the program decides.
  void Preempt();
  bool exited() const { return exited_; }

 private:
  explicit InteractiveRun(BoxSession& s) : session_(s) {}
  BoxSession& session_;
  bool exited_ = false;
};

}  // namespace lsb
