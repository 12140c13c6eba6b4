// The narrow interface every backend implements (DESIGN §2): start a box whose PID 1 is
// llm-sandbox-init, hand over its byte stream, apply outer limits, say how it died, destroy it.
// Everything about running a program lives in llm-sandbox-init; backends never interpret frames.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "policy/explain.h"
#include "policy/policy.h"
#include "protocol/messages.h"
#include "runtime/build_events.h"
#include "runtime/build_record.h"
#include "runtime/environment_build.h"

namespace lsb {

// What only the outer box knows, read after a run (or after init died).
struct BoxVerdict {
  std::optional<uint64_t> memory_peak_bytes;  // peak of the whole box (cgroup), when known
  std::optional<uint64_t> cpu_ns;             // cpu of the whole box (cgroup), when known
  // Cumulative: the kernel's OOM kills in the box, and failed forks/clones at its pids limit. A
  // session compares them before/after to tell whether THIS run hit them.
  uint64_t oom_kill_count = 0;
  uint64_t pids_limit_events = 0;
  // Set once the box's init has exited and the backend knows how (the engine's exit code for a
  // container: 128+signal when init was killed). Lets the runner say why a stream ended.
  std::optional<int> init_exit_code;
  // Set when the backend itself could not be asked (its engine stopped answering): why. The runner
  // then reports the run as a sandbox error naming it, not as whatever the box's end looks like.
  std::string backend_error;
};

// A live sample of a running box's resources (monitoring: CPU/RAM while it runs).
struct BoxUsage {
  std::optional<uint64_t> cpu_ns;        // cumulative cpu of the whole box
  std::optional<uint64_t> memory_bytes;  // memory in use now
};

// One live box. Destroying it kills every process in it and removes everything it created on the
// host (cgroups, temp dirs, containers): no path may leave a box behind.
class Box {
 public:
  virtual ~Box() = default;
  // A connected, bidirectional byte stream to init (frames of protocol/frame.h).
  virtual int stream_fd() const = 0;
  // Reads the outer verdict. May be called after each run; counters are cumulative per box, so
  // callers compare before/after (see Runner).
  virtual BoxVerdict Verdict() = 0;
  // Kills the box now (init and all its processes); the stream then reaches EOF.
  virtual void Kill() = 0;
  // A short id for logs ("native-3f2a...").
  virtual std::string id() const = 0;
  // What the box's init said outside the protocol (its stderr), for errors when it dies early.
  virtual std::string Diagnostics() { return {}; }
  // Called by the runner before each run, so per-run figures restart where the backend can
  // (native, cgroup v1: the memory peak). Counters stay cumulative.
  virtual void BeginRun() {}
  // Events the host side of the box saw itself since the last call: the egress proxy's connections
  // (docs/network.md). With `run_ended`, it first waits (bounded) until the box's open connections
  // have ended, so a run's result holds its own. Default: none.
  virtual std::vector<protocol::Event> TakeHostEvents(bool /*run_ended*/) { return {}; }
  // A live sample for monitoring, cheap enough to take every second; nullopt when the backend
  // cannot tell. Called on the thread that drives the box.
  virtual std::optional<BoxUsage> Usage() { return std::nullopt; }
  // Set when a warm pool did the kSetup -> kReady handshake ahead of the request (off its path):
  // that kReady, and the runner skips its own handshake. The pool sent the backend's
  // SetupFor(policy) for the very policy the box is handed out for.
  virtual std::optional<protocol::InitReady> ReadyAhead() const { return std::nullopt; }
  // For a process that exits right after its one run (`llm-sandbox run`): prepares, while the box
  // sets itself up, to leave its removal behind (DetachTeardown). False: nothing to prepare, the
  // box is destroyed as usual.
  virtual bool PrepareDetachedTeardown() { return false; }
  // Kills the box's init and leaves the rest of its removal to what PrepareDetachedTeardown set up,
  // so the caller does not wait for the kernel's teardown. True: this object owns nothing any more
  // (init is gone: the session must not talk to it). False: nothing changed.
  virtual bool DetachTeardown() { return false; }
  // Whether the box has ended on its own while idle (its init is gone): a warm pool drops it
  // instead of handing it out. A fork server's boxes end with their zygote.
  virtual bool Ended() { return false; }
};

// A warm pool's figures now (GET /readyz, /v1/overview; docs/api.md "Warm pool").
struct PoolStats {
  uint64_t hits = 0;      // boxes handed out warm
  uint64_t misses = 0;    // boxes that had to be started on the request's path
  size_t ready = 0;       // boxes waiting now
  size_t reaping = 0;     // used boxes waiting to be destroyed
  std::map<std::string, size_t> ready_by_policy;  // `ready`, per pooled policy (the dashboard)
  size_t per_policy = 0;  // the pool's target per policy
};

// How a backend enforces one policy control, for `policy explain` and fail-closed checks.
struct ControlSupport {
  std::string control;   // "resources.memory", "commands", "network.enabled", ...
  bool enforced = false;
  std::string how;       // "cgroup v1 memory.limit_in_bytes", or why it cannot be
};

// The part of every backend's SetupFor that is the policy's alone (the same on every backend):
// read_only, tmpfs, network, commands, user, trace. The backend adds its mode and rootfs.
protocol::BoxSetup PolicyBoxSetup(const Policy& policy);

// Who a box is for: the owner id of the request that asks for it (server/owner.h: "tok-...", or ""
// for the daemon's one user and the CLI). nullopt: no one in particular (a pool filling ahead for
// any request): such a box shares nothing a fast path could share (DESIGN §12) with any other.
using BoxOwner = std::optional<std::string>;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "native" | "docker"
  // Fail closed: an error naming every control of `policy` this backend cannot enforce here: those
  // RefusedControls names, and what this host or engine lacks for the others.
  virtual Status Check(const Policy& policy) const = 0;
  // How this backend enforces one row of `policy explain` (one control, or one item of it), or
  // why it cannot (Verdict::kRefused), whatever the host: each backend answers for every control of
  // the table in a switch with no default (policy/controls.h).
  virtual Enforcement DescribeControl(const ControlRow& row, const Policy& policy) const = 0;
  // The controls of `policy` DescribeControl refuses, one entry per reason (the rows that share it
  // named together): what Check refuses before it asks the host anything.
  std::vector<ControlSupport> RefusedControls(const Policy& policy) const;
  // Per control of `policy`: how this backend enforces it here, or why it cannot (Check's detail;
  // `policy explain`). Default: nothing known.
  virtual std::vector<ControlSupport> Explain(const Policy& /*policy*/) const { return {}; }
  // Starts a box for `policy`, failing closed as Check(policy) would (a backend may skip the
  // probes its own start makes anyway, and explain a failure with Check): never a box that would
  // lack a control. `setup` (SetupFor(policy)) is the stream's first frame (kSetup), delivered by
  // the backend as early as it can: the native backend writes it before init's process is
  // released, so init never waits for the host. A pool's box was set up ahead (ReadyAhead).
  // `owner`: what the backend may share among boxes to start them faster (the native fork server's
  // zygote) it shares only among boxes of one owner; a backend that shares nothing ignores it.
  virtual Result<std::unique_ptr<Box>> Start(const Policy& policy, const protocol::BoxSetup& setup,
                                             const BoxOwner& owner) = 0;
  // Whether a box Start made for one owner must never be handed to another (the native fork
  // server's boxes: each owner's come from a zygote of its own). A warm pool then keeps each
  // owner's boxes apart. Default: no, boxes share nothing by owner.
  virtual bool BoxesBelongToOwner() const { return false; }
  // The BoxSetup to send for `policy` on this backend (mode, rootfs...).
  virtual Result<protocol::BoxSetup> SetupFor(const Policy& policy) const = 0;
  // The box shape: what a box for `policy` is built with (`setup` is the SetupFor(policy) its init
  // is sent), as one key. Warm pools (Docker's, the daemon's native one) hand a box to a request
  // only when the request's policy has the box's shape, and the run then takes its limits from the
  // request's policy. Derived from the very data Start builds the box from, never from a list of
  // policy fields, so a field that changes the box changes the shape. Default: an error (a backend
  // that says nothing about its boxes never has one handed out).
  virtual Result<std::string> BoxShape(const Policy& policy, const protocol::BoxSetup& setup) const;
  // BoxShape(policy, SetupFor(policy)).
  Result<std::string> ShapeFor(const Policy& policy) const;

  // What a backend must tell the daemon, each with a default a new backend can keep:
  // Removes what boxes of a killed process left on the host (native: box cgroups); the daemon calls
  // it once at start. Returns how many were removed. Default: nothing is ever left.
  virtual size_t RemoveLeftovers() { return 0; }
  // The policies were reloaded (SIGHUP): what the backend keeps warm for them besides the pool
  // goes (a fork server stays until the last box it made is gone).
  virtual void PoliciesReloaded() {}
  // Warm boxes the backend keeps itself (Docker: containers started and set up in the engine): their
  // figures. nullopt (default): it keeps none, and the daemon's one-shot pool keeps boxes for it
  // (scheduler/one_shot_pool.h), so exactly one layer pools for each backend.
  virtual std::optional<PoolStats> OwnPoolStats() const { return std::nullopt; }
  // Zygote boxes of fork servers alive now (native; each holds two processes: init and python).
  virtual size_t ForkServers() const { return 0; }
  // For a policy Check(policy) refused: one line telling an operator how to get it run. Default:
  // fix what Check named, or choose another policy.
  virtual std::string RefusalFix(const Policy& policy) const;
  // container.build: `policy`'s environment, built now unless every step is stored already, each
  // progress line ("step 1/2 (pip ...): cached") to `progress` as well as to the backend's build
  // events. Default: an error saying this backend builds no environments.
  virtual Result<EnvironmentBuild> BuildEnvironment(const Policy& policy, const BuildProgress& progress);
  // What container.build's environment for `policy` holds (GET /v1/policies: python, packages, so
  // the model knows what it can import), as this backend recorded its last build (native: the
  // image store's record of the policy; Docker: the labels of the image this process built);
  // nothing is built here. nullopt before a build, without one, and by default.
  virtual std::optional<BuildRecord> BuildRecordOf(const Policy& /*policy*/) const { return std::nullopt; }
};

}  // namespace lsb
