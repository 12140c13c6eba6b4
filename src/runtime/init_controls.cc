#include "runtime/init_controls.h"

#include "policy/units.h"

namespace lsb {

std::string LandlockExecRules() {
  return "Landlock: EXECUTE and READ_FILE granted per allowed file plus the ELF interpreter (ld.so) it needs; the "
         "bin directories get only READ_DIR, so every other binary is unreadable and cannot run, not even as "
         "'ld.so /bin/sh'; writable mounts are noexec; memfd and execveat(AT_EMPTY_PATH) exec are refused by seccomp";
}

std::string InitEnforces(Control control, const Policy& p) {
  switch (control) {
    case Control::kLanguages:
      return "not a kernel control: picks the argv a run uses; the interpreter (command[0]) must pass commands.allow, "
             "or the run is refused before it starts";
    case Control::kTimeout:
      return "wall clock kept by llm-sandbox-init: at the limit every process of the box gets SIGTERM, then SIGKILL "
             "after resources.timeout_grace (orphans and programs that ignore SIGTERM included), and the run is "
             "reported as a timeout with exit code 124; the host destroys the box if init does not answer";
    case Control::kTimeoutGrace:
      if (p.timeout_grace_ms == 0) return "no grace: SIGKILL to every process of the box at the timeout";
      return "SIGTERM to every process of the box at the timeout, SIGKILL " +
             units::FormatDurationMs(p.timeout_grace_ms) +
             " later (llm-sandbox-init); what the program writes meanwhile is kept";
    case Control::kOutput:
      return "llm-sandbox-init counts stdout and stderr together; past the cap the program is killed, the output is "
             "truncated and the result flagged (output_limit)";
    case Control::kOpenFiles:
      return "RLIMIT_NOFILE " + std::to_string(p.open_files) +
             " set by llm-sandbox-init before exec; one more open fails with EMFILE";
    case Control::kFileSize:
      return "RLIMIT_FSIZE " + std::to_string(p.file_size_bytes) +
             " set by llm-sandbox-init before exec (and RLIMIT_CORE 0); a write past it fails with EFBIG";
    case Control::kEnv:
      return "llm-sandbox-init builds the program's environment from these; nothing of the host's environment is "
             "passed through";
    case Control::kWorkdir: return "llm-sandbox-init changes to it before exec; a missing directory fails the run";
    case Control::kAlerts:
      return "not a kernel control: the severity each alert is raised with, or none (off); the mechanisms that "
             "raise them are the other controls'";
    case Control::kSessionSetup:
      return "run once by a python session's interpreter in the box, under this policy's confinement, before a "
             "request's own setup; a reset returns to the state after it";
    case Control::kTrace:
      return p.trace ? "every exec and connect/sendto/bind is reported as a trace event (seccomp user notification, "
                       "watching only: the kernel layers decide), besides the alerts"
                     : "alerts only: denied exec, network attempt, refused escape syscall, OOM kill, pids limit, "
                       "timeout, output flood";
    case Control::kCommandsDeny:
      return "not in commands.allow, so Landlock refuses it; seccomp user notification also watches execve/execveat: "
             "an exec of a listed path fails with EACCES and raises a denied_exec alert naming it";
    default: return "";
  }
}

}  // namespace lsb
