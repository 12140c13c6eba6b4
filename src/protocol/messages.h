// The JSON control messages of the init protocol (docs/protocol.md). Host and init both include
// this file, so the two ends cannot disagree about a field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/bounded_json.h"
#include "protocol/frame.h"
#include "protocol/wire_values.h"

namespace lsb::protocol {

inline constexpr int kProtocolVersion = 1;

// The exit code of a run that reached its timeout, whatever signal ended it (docs/api.md "Exit
// codes"): 124, as coreutils timeout(1) says, so that shell users and every front end agree. The
// status kTimeout is the source of truth; ExitReport.signal says which signal ended the program.
inline constexpr int kTimeoutExitCode = 124;
// The longest SIGTERM-to-SIGKILL grace at a timeout (RunSpec.timeout_grace_ms; the policy's
// resources.timeout_grace is refused above it, init bounds it again).
inline constexpr uint64_t kMaxTimeoutGraceMs = 30000;

struct TmpfsSpec {
  std::string path;         // absolute mount point inside the box
  uint64_t size_bytes = 0;  // 0 = kernel default (half of RAM): the policy loader always sets one
  uint32_t mode = 01777;
  bool noexec = true;
  bool nosuid = true;
  bool nodev = true;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TmpfsSpec, path, size_bytes, mode, noexec, nosuid, nodev)

// A host directory in the box (policy container.mounts). The host checks the source against its
// allowed roots and opens it as a detached, id-mapped mount (runtime/host_mount.h); init only
// attaches what it is handed, by fd, never opening a host path itself.
struct MountSpec {
  std::string source;       // the real host path (for messages; init never opens it)
  std::string target;       // absolute mount point inside the box
  std::string mode = "ro";  // "ro" | "overlay"
  uint64_t size_bytes = 0;  // overlay: the size of the tmpfs holding the upper layer
  int fd = -1;              // the detached mount's fd in init (set when the box starts)
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(MountSpec, source, target, mode, size_bytes, fd)

// Where init writes the program file, on every backend (a small noexec tmpfs, read-only to the
// program; the Docker backend mounts it as a container tmpfs).
inline constexpr const char* kJobDir = "/run/job";

// Where a box with the network on reaches the egress proxy, inside its own network namespace
// (docs/network.md): the one listening socket there, made by the host and served outside the box.
inline constexpr const char* kEgressProxyIp = "127.0.0.1";
inline constexpr uint16_t kEgressProxyPort = 3128;
inline constexpr const char* kEgressProxyAddress = "127.0.0.1:3128";

// kSetup: how init builds the box's inner view, once.
struct BoxSetup {
  int protocol = kProtocolVersion;
  BoxMode mode = BoxMode::kBuildRoot;  // "build_root" | "in_place" (protocol/wire_values.h)
  std::string rootfs = "host";  // "host" (the host's system dirs, read-only), a directory path, or "image" (`layers`)
  bool read_only = true;
  std::vector<TmpfsSpec> tmpfs;
  std::vector<MountSpec> mounts;  // host directories, mounted with the tmpfs (shortest path first)
  std::string job_dir = kJobDir;  // where init writes the program file (noexec, read-only to it)
  std::string hostname = "sandbox";
  bool network_enabled = false;
  std::vector<std::string> allow;  // absolute paths of executables the program may execute
  std::vector<std::string> deny;   // absolute paths that must never run (alert names them)
  uint32_t uid = 1000;             // the program's uid/gid inside the box (never 0)
  uint32_t gid = 1000;
  bool trace = false;              // report every exec/connect as a trace event, not only alerts
  // The policy accepted gVisor's weaker mode (container.gvisor_accept_weaker): when the kernel
  // (gVisor's Sentry) has no Landlock or no seccomp user notification, init runs without them and
  // names them in InitReady.controls_off instead of refusing. Never set by the native backend.
  bool gvisor_accept_weaker = false;
  // rootfs "image" (native backend, an image from the store): the image's unpacked layers,
  // absolute directories, lowest first, at most kMaxImageLayers (init mounts them read-only as
  // one overlayfs, src/init/layers.h). Empty for "host" and a directory.
  std::vector<std::string> layers;
  // Where the image's config fills gaps the policy leaves (never loosens it): config.Env as
  // "KEY=VALUE" (its PATH finds commands the policy names by a path the image lacks, and each
  // variable the run does not set is passed if a request could pass it, env_rules.h), and
  // config.WorkingDir, set only when the policy has no container.workdir (the run's cwd when it
  // exists in the image).
  std::vector<std::string> image_env;
  std::string image_workdir;
  // With the network on through the egress proxy (native backend): kEgressProxyAddress. init then
  // refuses, with a network_attempt alert, every inet destination but this one. "" otherwise.
  std::string egress_proxy;
  // With network.secrets: the box CA's certificate (PEM; never its key), which init adds to the
  // trust bundle it writes for the program (egress_env.h), so the proxy can terminate TLS to the
  // secrets' hosts. "" otherwise.
  std::string egress_ca_pem;
  // What container.build put into the image at its build.files targets (absolute paths): readable
  // by the program (Landlock READ_FILE and READ_DIR beneath each), never writable, and executable
  // only where commands.allow names a file. Paths init's own rules already cover need no entry.
  std::vector<std::string> readable;
  // The fork server (native backend, docs/architecture.md "Fork server"): "" for a box of its own;
  // "zygote" for the box whose one program is the policy's warm interpreter, run as uid 0 of the
  // box without the program's confinement (its /proc has no masks, so the boxes it makes can mount
  // their own); "derived" for a box that interpreter made (init was executed by a fork of it, with
  // the next fork waiting on fd 3 to be confined and run the program): the root is the zygote's,
  // init mounts a fresh /proc, tmpfs and job dir over it.
  std::string fork;
  // "zygote" only: the descriptors init keeps for the interpreter (the daemon's socket,
  // liblsb-fork.so, init's binary), at their numbers; the interpreter gets them as 3, 4 and 5.
  std::vector<int> fork_fds;
  // matplotlib's font list (fontlist-v*.json), built once by the daemon from the host's fonts
  // (runtime/native/font_cache.h): init writes it read-only into the box's job dir and points
  // MPLCONFIGDIR there, so importing pyplot neither rebuilds it nor executes fc-list. "" for none.
  std::string font_cache_name;
  std::string font_cache;
};
// The largest number of layers an image root may have: overlayfs itself stacks at most 500 lower
// layers, and Docker's overlay2 driver refuses images of more than 125; 128 keeps the mount's
// option string (one short /proc/self/fd name per layer) well within the kernel's page for it.
inline constexpr size_t kMaxImageLayers = 128;
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(BoxSetup, protocol, mode, rootfs, read_only, tmpfs, mounts,
                                                job_dir, hostname, network_enabled, allow, deny,
                                                uid, gid, trace, gvisor_accept_weaker,
                                                layers, image_env, image_workdir, egress_proxy, egress_ca_pem,
                                                readable, fork, fork_fds, font_cache_name, font_cache)

// kRun: one program execution. argv may contain "{file}", replaced by job_dir/file_name.
struct RunSpec {
  std::vector<std::string> argv;
  std::string file_name = "main";
  std::map<std::string, std::string> env;
  std::string workdir = "/tmp";
  uint64_t timeout_ms = 30000;
  // At the timeout every process gets SIGTERM, and SIGKILL this long after (0: SIGKILL at once), so
  // a program can still write what it has (a test runner's summary). Never more than timeout_ms.
  uint64_t timeout_grace_ms = 2000;
  uint64_t output_limit_bytes = 1 << 20;  // stdout + stderr together; beyond it: killed, truncated
  uint64_t nofile = 256;                  // RLIMIT_NOFILE
  uint64_t file_size_bytes = 64ull << 20; // RLIMIT_FSIZE
  bool stdin_follows = false;             // kStdin frames then kStdinEof follow kCode
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RunSpec, argv, file_name, env, workdir, timeout_ms,
                                                timeout_grace_ms, output_limit_bytes, nofile, file_size_bytes,
                                                stdin_follows)

struct InitReady {
  int protocol = kProtocolVersion;
  int landlock_abi = 0;
  BoxMode mode = BoxMode::kBuildRoot;
  // Controls init runs without, each "<control>: <why>"; empty unless BoxSetup.gvisor_accept_weaker.
  std::vector<std::string> controls_off;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(InitReady, protocol, landlock_abi, mode, controls_off)

// What the egress proxy saw of one connection (an Event of kind "egress"; docs/network.md).
struct EgressInfo {
  std::string host;        // the name (or address) the program asked for
  uint16_t port = 0;
  std::string method;      // "GET", "CONNECT", ...
  std::string path;        // the request's path for plain HTTP (query dropped); "" for CONNECT
  std::string resolved;    // the address the proxy connected to, "" when it did not
  uint64_t bytes_up = 0;   // program -> upstream
  uint64_t bytes_down = 0; // upstream -> program
  uint64_t duration_ms = 0;
  bool operator==(const EgressInfo&) const = default;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(EgressInfo, host, port, method, path, resolved, bytes_up,
                                                bytes_down, duration_ms)

// kEvent: something the program did that the host should know about.
struct Event {
  std::string kind;      // "exec" | "connect" | "sendto" | "bind" | "syscall" | "output_limit" | "timeout"
  Severity severity = Severity::kInfo;  // "info" (trace) | "warning" | "critical"
  AlertRule rule = AlertRule::kNone;    // "network_attempt", "denied_exec", ...; "" for trace
  std::string message;   // human words: "exec of /bin/sh denied: not in commands.allow"
  int pid = 0;           // pid inside the box
  std::string path;      // exec path
  std::vector<std::string> argv;
  std::string address;   // "127.0.0.1:6379", "[::1]:80", "unix:/path"
  std::string decision;  // "allowed" | "denied"
  uint64_t time_ms = 0;  // since the run started
  // kind "summary" (protocol/alert_coalescer.h): how many alerts of `rule` past the per-run bound
  // this one stands for; time_ms is the last of them. 0 for any other event.
  uint64_t count = 0;
  // kind "egress" (the host's egress proxy, never init): the connection. Serialized only then.
  EgressInfo egress;
};
namespace detail {
struct EventFields {
  std::string kind;
  Severity severity = Severity::kInfo;
  AlertRule rule = AlertRule::kNone;
  std::string message;
  int pid = 0;
  std::string path;
  std::vector<std::string> argv;
  std::string address, decision;
  uint64_t time_ms = 0, count = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(EventFields, kind, severity, rule, message, pid, path, argv,
                                                address, decision, time_ms, count)
}  // namespace detail
inline void to_json(nlohmann::json& j, const Event& e) {
  j = detail::EventFields{e.kind, e.severity, e.rule, e.message, e.pid, e.path, e.argv,
                          e.address, e.decision, e.time_ms, e.count};
  if (!e.egress.host.empty()) j["egress"] = e.egress;
}
inline void from_json(const nlohmann::json& j, Event& e) {
  detail::EventFields f = j.get<detail::EventFields>();
  e.kind = std::move(f.kind);
  e.severity = f.severity;
  e.rule = f.rule;
  e.message = std::move(f.message);
  e.pid = f.pid;
  e.path = std::move(f.path);
  e.argv = std::move(f.argv);
  e.address = std::move(f.address);
  e.decision = std::move(f.decision);
  e.time_ms = f.time_ms;
  e.count = f.count;
  if (auto it = j.find("egress"); it != j.end()) e.egress = it->get<EgressInfo>();
}

// An alert of `rule`, raised with the rule's default severity (wire_values.h); the caller adds
// what it knows (path, address, decision, time).
inline Event MakeAlert(AlertRule rule, std::string kind, std::string message) {
  Event e;
  e.kind = std::move(kind);
  e.rule = rule;
  e.severity = DefaultSeverity(rule);
  e.message = std::move(message);
  return e;
}

// kExit: the run is over. status: "ok" (exit 0), "error" (exit != 0), "killed" (by a signal),
// "timeout", "output_limit", "denied" (the program itself could not be executed). The host may
// refine it with what only the outer box knows ("oom").
struct ExitReport {
  ExecStatus status = ExecStatus::kError;
  int exit_code = -1;  // the program's exit code, 128+signal when killed, kTimeoutExitCode on timeout
  int signal = 0;      // the signal that ended the program (SIGTERM or SIGKILL at a timeout), or 0
  uint64_t duration_ms = 0;
  uint64_t cpu_ms = 0;          // user+sys of the whole reaped process tree
  uint64_t max_rss_bytes = 0;   // largest single process RSS (the host refines with cgroup peak)
  uint64_t stdout_bytes = 0;    // bytes produced (including those past the cap)
  uint64_t stderr_bytes = 0;
  bool truncated = false;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ExitReport, status, exit_code, signal, duration_ms,
                                                cpu_ms, max_rss_bytes, stdout_bytes, stderr_bytes,
                                                truncated)

struct InitError {
  ErrorStage stage = ErrorStage::kProtocol;  // "setup" | "run" | "protocol"
  std::string message;  // names the control that could not be enforced and why
  int sys_errno = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(InitError, stage, message, sys_errno)

// Parses a control message as T, within the limits of base/bounded_json.h (one frame's bytes,
// kJsonMaxDepth levels): the host reads what a subverted init sends, and no message of the
// protocol nests more than three levels. No field of the protocol is fractional, so a
// floating-point number anywhere is refused: nlohmann would static_cast it into an integer field,
// which is undefined behaviour out of range (found by fuzzing). Throws (std::invalid_argument,
// nlohmann's exceptions); callers catch std::exception.
template <typename T>
T ParseMessage(std::string_view payload) {
  ParsedJson parsed = ParseBoundedJson(payload, {kMaxFramePayload, kJsonMaxDepth, kJsonMaxElements});
  if (!parsed.ok()) throw std::invalid_argument("a protocol message is refused: " + parsed.error().message);
  nlohmann::json j = std::move(parsed).value();
  std::vector<const nlohmann::json*> todo{&j};
  while (!todo.empty()) {
    const nlohmann::json* v = todo.back();
    todo.pop_back();
    if (v->is_number_float()) throw std::invalid_argument("a protocol message has no fractional numbers");
    if (v->is_structured())
      for (const auto& child : *v) todo.push_back(&child);
  }
  return j.get<T>();
}

}  // namespace lsb::protocol
