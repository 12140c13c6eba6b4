// Every policy control, declared once. A control is one thing a policy asks a box to be or not to
// do (`resources.memory`, `network.enabled`, `container.mounts`, ...). Its row below gives its
// dotted key, the YAML section it sits in, whether a request may narrow it, its default and a line
// of doc; the parser's key lists, the request override, `policy explain` and the docs' table read it.
//
// Adding a control is one row here plus its enforcement: every backend answers for every control
// in a `switch` with no `default` (runtime/native/native_controls.cc,
// runtime/docker/docker_controls.cc), built with -Werror=switch, so a row no backend has considered
// does not compile. docs/architecture.md "How to add a control" walks through it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lsb {

struct Policy;

// Where a control sits in the YAML: its section ("container", ...), or the top level, or nowhere
// (kBuiltIn: a control every box has, which no policy can turn off, explained all the same).
enum class ControlSection : uint8_t { kTop, kContainer, kNetwork, kCommands, kResources, kMonitoring, kSession, kBuiltIn };

// Whether a request (POST /v1/execute, a session's create) may narrow the control (DESIGN §4: lower
// a limit, turn the network off, shorten the allowlist), never widen it (policy/tighten.h).
enum class Narrowing : uint8_t { kNo, kLower };

// X(enumerator, key, section, narrowing, default, doc), in the order `policy explain` prints them.
#define LSB_POLICY_CONTROLS(X)                                                                                        \
  X(kImage, "container.image", kContainer, kNo, "host", "the box's root filesystem: an image, or the host's system dirs") \
  X(kPull, "container.pull", kContainer, kNo, "missing", "when the native backend fetches an image its store lacks")  \
  X(kBuild, "container.build", kContainer, kNo, "(none)", "the environment baked into an image derived from the image") \
  X(kReadOnly, "container.read_only", kContainer, kNo, "true", "the root is read-only (false is refused)")              \
  X(kTmpfs, "container.tmpfs", kContainer, kNo, "(none)", "writable in-memory mounts, sized, noexec")                  \
  X(kMounts, "container.mounts", kContainer, kNo, "(none)", "host directories in the box, read-only or as an overlay") \
  X(kUserNamespace, "container.user_namespace", kContainer, kNo, "true", "the box's own user namespace")               \
  X(kUser, "container.user", kContainer, kNo, "1000:1000", "the program's uid:gid inside the box; never 0")           \
  X(kPrivileges, "privileges", kBuiltIn, kNo, "none (always)", "no capability on the host, no_new_privs")            \
  X(kSeccomp, "container.seccomp", kContainer, kNo, "default", "the seccomp filter (default is the only profile)")    \
  X(kNetworkEnabled, "network.enabled", kNetwork, kLower, "false", "whether the box reaches anything outside it")    \
  X(kNetworkAllow, "network.allow", kNetwork, kLower, "[]", "the names and addresses the egress proxy lets through")  \
  X(kNetworkDeny, "network.deny", kNetwork, kNo, "[]", "names and addresses refused even when allowed")                \
  X(kNetworkSecrets, "network.secrets", kNetwork, kNo, "[]", "headers the egress proxy adds; values never in the box") \
  X(kCommandsAllow, "commands.allow", kCommands, kNo, "[the default language's interpreter]",                         \
    "the only executables that may run")                                                                             \
  X(kCommandsDeny, "commands.deny", kCommands, kNo, "[]", "executables whose exec is refused and alerted")             \
  X(kLanguages, "languages", kTop, kNo, "python, bash, sh, node", "the argv a run of each language uses")        \
  X(kCpu, "resources.cpu", kResources, kLower, "0 (unlimited)", "CPU cores the box may use")                           \
  X(kMemory, "resources.memory", kResources, kLower, "0 (unlimited)", "memory of the whole box, tmpfs pages included") \
  X(kPids, "resources.pids", kResources, kLower, "128", "processes and threads of the box")                            \
  X(kTimeout, "resources.timeout", kResources, kLower, "30s", "wall clock of one run")                                 \
  X(kTimeoutGrace, "resources.timeout_grace", kResources, kLower, "2s", "SIGTERM to SIGKILL at the timeout")           \
  X(kOutput, "resources.output", kResources, kLower, "1M", "stdout and stderr of one run, together")                   \
  X(kOpenFiles, "resources.open_files", kResources, kLower, "256", "open files per process (RLIMIT_NOFILE)")           \
  X(kFileSize, "resources.file_size", kResources, kLower, "64M", "the largest file a process may write (RLIMIT_FSIZE)") \
  X(kEnv, "container.env", kContainer, kNo, "(none)", "the program's environment; nothing of the host's")             \
  X(kWorkdir, "container.workdir", kContainer, kNo, "/tmp", "the program's working directory")                        \
  X(kTrace, "monitoring.trace", kMonitoring, kNo, "false", "every exec and connect reported as a trace event")         \
  X(kAlerts, "monitoring.alerts", kMonitoring, kNo, "(built-in severities)", "each alert rule's severity, or off")     \
  X(kSessionSetup, "session.setup", kSession, kNo, "(none)", "Python a python session runs once when it starts")       \
  X(kBackend, "backend", kTop, kNo, "auto", "which backend must run the policy: auto, native or docker")               \
  X(kRuntime, "container.runtime", kContainer, kNo, "runc", "the Docker runtime: runc, or runsc (gVisor)")             \
  X(kGvisorAcceptWeaker, "container.gvisor_accept_weaker", kContainer, kNo, "false",                                   \
    "accepts what gVisor cannot enforce (commands, exec/connect reports)")

#define LSB_CONTROL_ENUMERATOR(id, key, section, narrowing, default_value, doc) id,
enum class Control : uint8_t { LSB_POLICY_CONTROLS(LSB_CONTROL_ENUMERATOR) };
#undef LSB_CONTROL_ENUMERATOR

struct ControlInfo {
  Control id;
  std::string_view key;       // dotted: "resources.memory"; "privileges" for the built-in one
  ControlSection section;
  Narrowing narrowing;
  std::string_view default_value;  // as docs/policy.md writes it
  std::string_view doc;            // one line
  // The key inside its section ("memory"); the whole key at the top level and for kBuiltIn.
  std::string_view yaml_key() const;
};

#define LSB_CONTROL_COUNT(id, key, section, narrowing, default_value, doc) +1
inline constexpr size_t kControlCount = 0 LSB_POLICY_CONTROLS(LSB_CONTROL_COUNT);
#undef LSB_CONTROL_COUNT

// Every control, in the table's order.
const std::array<ControlInfo, kControlCount>& AllControls();
const ControlInfo& InfoOf(Control control);
inline std::string KeyOf(Control control) { return std::string(InfoOf(control).key); }

// The YAML section's name ("container"); "" for kTop and kBuiltIn.
std::string_view SectionName(ControlSection section);
// The keys a section takes, in the table's order (the parser's list of known keys for it).
std::vector<std::string> KeysOfSection(ControlSection section);

// The table as Markdown, one row per control (key, default, whether a request may lower it, doc):
// `llm-sandbox policy controls` prints it and docs/policy.md holds it, checked equal by a test.
std::string ControlsMarkdown();

// Whether the policy's file wrote the control (or, for a mapping, any key under it).
bool WrittenInPolicy(const Policy& policy, Control control);

// How a backend enforces one control of a policy (`policy explain`, each backend's Check).
enum class Verdict : uint8_t {
  kEnforced,  // the mechanism is in `how`
  kAccepted,  // not enforced, and the policy accepted that in writing (container.gvisor_accept_weaker)
  kRefused,   // cannot be enforced: the backend refuses the policy, `how` saying why
};
struct Enforcement {
  Verdict verdict = Verdict::kEnforced;
  std::string how;
  bool enforced() const { return verdict == Verdict::kEnforced; }
};
inline Enforcement Enforced(std::string how) { return {Verdict::kEnforced, std::move(how)}; }
inline Enforcement Accepted(std::string why) { return {Verdict::kAccepted, std::move(why)}; }
inline Enforcement Refused(std::string why) { return {Verdict::kRefused, std::move(why)}; }

}  // namespace lsb
