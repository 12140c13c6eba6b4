#include "scheduler/driver/repl_driver.h"

#include "inbox/inbox_sources.h"
#include "scheduler/driver/repl_messages.h"

namespace lsb::sched {
namespace {

bool IsShell(const std::string& language) { return language == "bash" || language == "sh"; }

}  // namespace

bool ReplDriverSupported(const Policy& policy, const std::string& language) {
  if (!IsShell(language) && language != "node") return false;
  const Language* lang = policy.FindLanguage(language);
  // A command of its own shape ("-c" code, a wrapper) may not run a program file: plain runs then.
  if (!lang || lang->command.size() < 2 || lang->command.back() != "{file}") return false;
  return policy.Allows(lang->command[0]) && !policy.Denies(lang->command[0]);
}

std::string ReplDriverNoun(const std::string& language) { return IsShell(language) ? "shell" : "node context"; }

Result<std::unique_ptr<ReplDriver>> ReplDriver::Start(BoxSession& session, const std::string& language,
                                                      uint64_t lifetime_ms) {
  const Policy& policy = session.policy();
  if (!ReplDriverSupported(policy, language))
    return Error{"policy '" + policy.name + "' cannot run a persistent " + language + " for a session"};
  ExecRequest req;
  req.language = language;
  req.stdin_data = "";
  LSB_ASSIGN_OR_RETURN(protocol::RunSpec spec, BuildRunSpec(policy, req));
  std::unique_ptr<ReplDriver> d(new ReplDriver());
  d->shell_ = IsShell(language);
  d->what_ = ReplDriverNoun(language);
  spec.file_name = d->shell_ ? "lsb_shell_driver.sh" : "lsb_node_driver.js";
  spec.timeout_ms = lifetime_ms;
  // The host enforces each execute's own cap; the driver's whole-life output has none of its own.
  spec.output_limit_bytes = uint64_t{1} << 50;
  std::string_view program = d->shell_ ? inbox::ShellDriverSource() : inbox::NodeDriverSource();
  LSB_ASSIGN_OR_RETURN(d->wire_, DriverWire::Start(session, std::move(spec), program));
  return d;
}

Result<ExecResult> ReplDriver::Execute(const std::string& code, const std::string& stdin_data, uint64_t timeout_ms,
                                       uint64_t output_cap, const RunCallbacks* live) {
  ReplMessage m = shell_ ? ShellMessage(code, stdin_data) : NodeMessage(code, stdin_data);
  return wire_->RunCode(m.header, m.body, "", timeout_ms, output_cap, live, nullptr, what_);
}

}  // namespace lsb::sched
