// A bash, sh or node session's persistent driver: ONE long run of the policy's own interpreter for
// the session's language on the session's box, over the wire every session driver shares
// (driver_wire.h). Each execute's code runs in the driver's one state:
//   - bash/sh (src/inbox/shell_driver.sh): eval'd at the top level of one shell, so variables,
//     functions, the working directory and exported variables stay;
//   - node (src/inbox/node_driver.js): run as a script in one vm context, so globals, `var` and
//     top-level `let`/`const` stay; a returned Promise is awaited.
// The code's stdin is the request's data (or empty), never the wire. On timeout or output cap the
// run is killed and the result says so ("interpreter_restarted"), as for python; code that ends
// the run (`exit`, process.exit) gets its exit code reported. Either way alive() turns false and the
// owner starts a new driver for the next execute.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/result.h"
#include "runtime/runner.h"
#include "scheduler/driver/driver_wire.h"

namespace lsb::sched {

// Whether a session in `language` gets a ReplDriver under `policy`: bash, sh or node, whose
// command runs a program file ("{file}" last) and is allowed. Else its executes are plain runs.
bool ReplDriverSupported(const Policy& policy, const std::string& language);
// How results, alerts and reset reports name the driver of `language`: "shell" or "node context".
std::string ReplDriverNoun(const std::string& language);

class ReplDriver {
 public:
  // Starts the driver for `language` (ReplDriverSupported) with `lifetime_ms` as its wall limit.
  static Result<std::unique_ptr<ReplDriver>> Start(BoxSession& session, const std::string& language,
                                                   uint64_t lifetime_ms);

  // Runs `code` in the driver's state, within `timeout_ms` and `output_cap`; `live` gets the output
  // as it comes. (A session reset ends a running execute by killing the box: Session::Preempt.)
  Result<ExecResult> Execute(const std::string& code, const std::string& stdin_data, uint64_t timeout_ms,
                             uint64_t output_cap, const RunCallbacks* live = nullptr);

  bool alive() const { return wire_ && wire_->alive(); }
  void Stop() {
    if (wire_) wire_->Stop();
  }
  // ReplDriverNoun of its language.
  const std::string& what() const { return what_; }

 private:
  ReplDriver() = default;
  std::unique_ptr<DriverWire> wire_;
  bool shell_ = true;
  std::string what_;
};

}  // namespace lsb::sched
