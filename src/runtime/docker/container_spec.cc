#include "runtime/docker/container_spec.h"

#include <cmath>
#include <cstdio>

#include "policy/tmpfs_options.h"

namespace lsb::docker {

uint64_t HostPidsLimit(const Policy& policy) {
  if (policy.runtime != ContainerRuntime::kRunsc) return policy.pids;
  // gVisor: every task of the box is backed by host threads of the Sentry (and, on the ptrace
  // platform, a stub per address space): measured 48 host pids for an idle box and ~790 for a box
  // at 128 tasks. At pids.max the Sentry's Go runtime cannot start a thread and the whole sandbox
  // dies (exit 2) instead of the program's fork failing, so the host ceiling leaves room for that.
  return policy.pids * kGvisorHostPidsPerTask + kGvisorHostPidsBase;
}

nlohmann::json BuildContainerSpec(const Policy& policy, const SpecInputs& in) {
  using nlohmann::json;
  json tmpfs = json::object();
  for (const auto& t : policy.tmpfs)
    tmpfs[t.path] = FormatTmpfsOptions(t.size_bytes, t.mode, t.noexec, t.nosuid, t.nodev);
  // World-writable + sticky because init runs as the policy's unprivileged uid (no CAP_CHOWN to
  // give itself the directory); Landlock inside makes the program file read-only to the program.
  if (!tmpfs.contains(kJobDir)) tmpfs[kJobDir] = FormatTmpfsOptions(kJobDirBytes, 01777, true, true, true);

  json security_opt = json::array({"no-new-privileges"});
  if (!in.seccomp_opt.empty()) security_opt.push_back(in.seccomp_opt);

  std::string init_dir = kInitInContainer;
  init_dir = init_dir.substr(0, init_dir.rfind('/'));
  std::string entrypoint = in.init_volume.empty() ? kInitInContainer : init_dir + "/" + in.init_volume_file;
  json binds = json::array();
  json mounts = json::array();
  if (in.init_volume.empty()) {
    binds.push_back(in.init_host_path + ":" + kInitInContainer + ":ro");
  } else {
    mounts.push_back(json{{"Type", "volume"}, {"Source", in.init_volume}, {"Target", init_dir}, {"ReadOnly", true},
                          {"VolumeOptions", json{{"NoCopy", true}}}});
  }
  json host = {
      {"Binds", binds},
      {"Mounts", mounts},
      {"ReadonlyRootfs", policy.read_only},
      {"Tmpfs", tmpfs},
      // Only allow: ["*"] joins the bridge; a filtered network is "none" plus the egress proxy's
      // socket, made in the container's namespace once it runs (egress_attach.h).
      {"NetworkMode", policy.NetworkUnfiltered() ? kIsolatedNetwork : "none"},
      {"CapDrop", json::array({"ALL"})},
      {"SecurityOpt", security_opt},
      {"PidsLimit", HostPidsLimit(policy)},
      {"IpcMode", "private"},
      {"Init", false},        // our init is PID 1, not the engine's tini
      {"AutoRemove", false},  // we remove it ourselves, after reading OOMKilled
      {"Privileged", false},
      {"Runtime", Spelling(policy.runtime)},
  };
  // Core dumps never leave the box; init sets the program's own limits (RunSpec), core 0 included,
  // so on Podman (see SpecInputs::podman) the program's limits are the same without this.
  if (!in.podman) host["Ulimits"] = json::array({json{{"Name", "core"}, {"Soft", 0}, {"Hard", 0}}});
  if (policy.runtime != ContainerRuntime::kRunsc) {
    // The engine's default masked paths (moby 20.10 oci/defaults.go; a list given here replaces
    // them) plus the host's boot parameters and boot id (/proc/cmdline can carry tokens;
    // the native backend masks the same). gVisor's /proc is its own and shows none of these.
    host["MaskedPaths"] = json::array({"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys",
                                       "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
                                       "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/proc/cmdline",
                                       "/proc/bootconfig", "/proc/sys/kernel/random/boot_id"});
  }
  if (policy.runtime == ContainerRuntime::kRunsc) {
    // Under gVisor the policy's pids limit is the Sentry's own RLIMIT_NPROC (it counts the box's
    // tasks, init included, and refuses fork with EAGAIN); the host's pids.max only bounds the
    // Sentry's threads (see HostPidsLimit). runc must not get this: there RLIMIT_NPROC counts
    // every process of the uid on the host.
    if (!host.contains("Ulimits")) host["Ulimits"] = json::array();
    host["Ulimits"].push_back(json{{"Name", "nproc"}, {"Soft", policy.pids}, {"Hard", policy.pids}});
  }
  if (policy.memory_bytes) {
    host["Memory"] = policy.memory_bytes;
    host["MemorySwap"] = policy.memory_bytes;  // equal: no swap on top of the limit
  }
  if (policy.cpu > 0) host["NanoCpus"] = static_cast<int64_t>(std::llround(policy.cpu * 1e9));

  json labels = {{kLabelOwner, in.owner}, {kLabelPolicy, policy.name}};
  if (in.pooled) labels[kLabelPool] = "1";

  return json{
      {"Image", in.image},
      {"Entrypoint", json::array({entrypoint})},
      {"Cmd", json::array()},
      {"User", std::to_string(policy.uid) + ":" + std::to_string(policy.gid)},
      {"WorkingDir", "/"},
      {"Hostname", "sandbox"},
      {"Env", json::array({"PATH=/usr/local/bin:/usr/bin:/bin"})},
      {"Labels", labels},
      // The init protocol travels on stdin/stdout of the attach connection; no TTY, so stdout and
      // stderr arrive multiplexed and init's diagnostics (stderr) stay apart from its frames.
      {"AttachStdin", true},
      {"AttachStdout", true},
      {"AttachStderr", true},
      {"OpenStdin", true},
      // When our attach connection closes (the box is destroyed), the engine closes init's stdin:
      // init reads EOF, kills what is left and exits, so the container stops by itself and its
      // removal needs no kill from the engine (one runtime call less per box; container_reaper.h).
      {"StdinOnce", true},
      {"Tty", false},
      // A filtered network needs no engine networking either (no libnetwork-setkey hook, ~80 ms):
      // runc's new namespace has its loopback up, and the egress proxy's socket is all it gets.
      {"NetworkDisabled", !policy.NetworkUnfiltered()},
      {"HostConfig", host},
  };
}

}  // namespace lsb::docker
