// The policy: what a sandboxed program may do. Loaded from YAML (policy_loader.h), documented field
// by field in docs/policy.md. Every field has a defined value after loading; "left out" is resolved
// by the loader to the documented default, so consumers never guess.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "policy/backend_choice.h"
#include "protocol/wire_values.h"

namespace lsb {

// Where a value came from, for error messages and `policy explain`.
struct SourcePos {
  std::string file;
  int line = 0;    // 1-based; 0 = not from the file (a default)
  int column = 0;  // 1-based
  std::string ToString() const;  // "file:line:column" or "(default)"
};

struct TmpfsMount {
  std::string path;             // absolute
  uint64_t size_bytes = 0;      // always set: the loader requires size= or applies 64M
  uint32_t mode = 01777;
  bool noexec = true;           // every writable mount is noexec: the loader refuses "exec"
  bool nosuid = true;
  bool nodev = true;
  std::string options;          // the text as written, for explain
};

// How a language's program is run: argv with "{file}" standing for the program file.
struct Language {
  std::string name;
  std::vector<std::string> command;  // command[0] is an absolute path that must be allowed
  std::string file_name;             // e.g. "main.py"
};

// The smallest limits a box runs with, for policies and requests alike (docs/policy.md
// "resources"): below them the box itself fails, not the program (init is OOM-killed before it can
// report; Docker refuses Memory under 6 MB and NanoCpus under 0.01 CPU), which would be a sandbox
// error instead of the caller's mistake.
inline constexpr uint64_t kMinMemoryBytes = 16ull << 20;
inline constexpr double kMinCpu = 0.01;

// network.secrets: a header the egress proxy adds to requests for `host` (docs/network.md). The
// value names variables of the daemon's environment ("Bearer ${TOKEN}"); it never enters the box.
struct NetworkSecret {
  std::string host;    // a name (normalized), no wildcard
  std::string header;  // an HTTP header name
  std::string value;   // as written, with its ${VAR} references
};

// container.mounts: a host directory in the box (docs/policy.md "container.mounts"). The daemon
// binds it only when its real path is under a root the operator allowed (serve/run --mount-root);
// anything else refuses the box, naming the source and the flag.
struct HostMount {
  std::string source;   // absolute host path, as written (resolved and checked by the backend)
  std::string target;   // absolute, normalized path in the box, not under /proc, /dev, /sys, /run/job
  std::string mode = "ro";  // ro: read-only bind; overlay: writable copy-on-write view, writes stay in the box
  uint64_t size_bytes = 256ull << 20;  // overlay: the tmpfs holding what the box writes (its upper layer)
};
// At most this many container.mounts entries.
inline constexpr size_t kMaxHostMounts = 16;

// container.build: what the environment needs, baked into an image derived from container.image
// before any box runs (docs/policy.md "container.build", src/build/). Steps run in this order:
// apt, pip, files, run; each becomes one cached layer.
struct BuildFile {
  std::string target;  // absolute path in the image; a trailing '/' means "into this directory"
  std::string source;  // relative to the policy file's directory, no '..', no absolute path
};
struct BuildSpec {
  std::vector<std::string> pip;             // requirement specifiers, passed as argv (never a shell)
  std::string pip_index_url = "https://pypi.org/simple";
  std::vector<std::string> apt;             // Debian packages (name[:arch][=version]), argv to apt-get
  // build.apt_sources: one-line sources.list entries that replace the image's own sources for the
  // apt step (none: the image's). Their hosts are added to the default build.network.
  std::vector<std::string> apt_sources;
  std::vector<BuildFile> files;
  std::vector<std::string> run;             // each run by /bin/sh -c in the build box
  // build.network: the build's own egress (the program's network section never applies to it).
  // Not written: the index's host (and files.pythonhosted.org for pypi.org) only.
  std::vector<std::string> network_allow, network_deny;
  uint64_t timeout_ms = 20 * 60 * 1000;     // build.timeout, per step
  uint64_t memory_bytes = 2ull << 30;       // build.memory, the build box's cgroup
  uint64_t output_bytes = 4ull << 20;       // build.output: a step's log kept (the tail beyond)
  // build.disk: what a step may write into the image (its upper layer), bounded while it writes.
  uint64_t disk_bytes = 2ull << 30;
  bool disk_set = false;  // build.disk written in the policy: a backend that cannot bound a step refuses it
  std::string policy_dir;                   // where files' sources are (the policy file's dir)
  bool empty() const { return pip.empty() && apt.empty() && files.empty() && run.empty(); }
};

struct Policy {
  std::string version;  // "1.0"
  std::string name;
  std::string description;  // free text, optional (policy/builtin_descriptions.h fills a known few)
  std::string source_file;

  BackendKind backend = BackendKind::kAuto;
  ContainerRuntime runtime = ContainerRuntime::kRunc;  // Docker only; YAML: container.runtime
  // container.gvisor_accept_weaker: under runsc, Landlock and seccomp user notification do not
  // exist, so commands are not enforced inside the box and exec/connect are not watched. The
  // loader refuses runtime runsc unless the policy sets this to true.
  bool gvisor_accept_weaker = false;

  // container:
  std::string image;             // e.g. "python:3.12-slim"; "host" = the host's system dirs
  // container.pull: when the native backend fetches an image its store lacks (box_root.h):
  // "missing" (default), "always" (before every box), "never". Not changed by a request.
  std::string pull = "missing";
  bool read_only = true;
  std::vector<TmpfsMount> tmpfs;
  std::vector<HostMount> mounts;  // container.mounts
  bool user_namespace = true;
  std::string seccomp = "default";
  uint32_t uid = 1000;           // container.user "uid:gid"; never 0
  uint32_t gid = 1000;
  std::string workdir = "/tmp";
  std::map<std::string, std::string> env;
  BuildSpec build;               // container.build; empty() = the image as it is

  // network:
  bool network_enabled = false;
  // network.allow / network.deny, each entry checked by the loader (policy/network_rules.h); with
  // the network on, a name is reachable only if an allow entry matches and no deny entry does.
  // Empty allow: nothing is ("*" must be written to allow every name).
  std::vector<std::string> network_allow;
  std::vector<std::string> network_deny;
  std::vector<NetworkSecret> network_secrets;

  // commands:
  std::vector<std::string> allow;  // absolute paths (presets already expanded into it)
  std::vector<std::string> deny;   // absolute paths
  // The presets commands.allow named ("@coreutils", ...; policy/command_presets.h), as written; their
  // paths are in `allow`, less any that commands.deny names.
  std::vector<std::string> allow_presets;

  // languages: (built-ins python, bash, sh, node unless overridden)
  std::map<std::string, Language> languages;
  std::string default_language = "python";

  // resources:
  double cpu = 0;                  // cores; 0 = unlimited
  uint64_t memory_bytes = 0;       // 0 = unlimited
  uint64_t timeout_ms = 30000;
  // resources.timeout_grace: at the timeout every process gets SIGTERM, and SIGKILL this long after
  // (0: SIGKILL at once). At most 30 s (protocol::kMaxTimeoutGraceMs) and at most the timeout.
  uint64_t timeout_grace_ms = 2000;
  uint32_t pids = 128;
  uint64_t output_bytes = 1 << 20; // stdout+stderr cap
  uint64_t open_files = 256;
  uint64_t file_size_bytes = 64ull << 20;

  // monitoring:
  bool trace = false;  // every exec, connect/sendto/bind and file open is reported (trace events)
  // monitoring.alerts: rule -> info | warning | critical, or nullopt for "off"; rules left out
  // keep their built-in severity (policy/alert_rules.h).
  std::map<protocol::AlertRule, std::optional<protocol::Severity>> alert_severity;

  // session.setup: Python every python session of this policy runs once when its interpreter
  // starts, before a request's own setup; a reset returns to the state after it (docs/policy.md).
  std::string session_setup;

  // Where each field was set, keyed by its dotted path ("resources.memory"), for explain.
  std::map<std::string, SourcePos> positions;

  // The network is on with allow: ["*"] and no deny or secrets: every name (what Docker's bridge
  // gives). The egress proxy still refuses private and local addresses on the native backend.
  bool NetworkUnfiltered() const;
  const Language* FindLanguage(const std::string& lang) const;
  // Exact path membership in commands.allow / commands.deny.
  bool Allows(const std::string& path) const;
  bool Denies(const std::string& path) const;
};

}  // namespace lsb
