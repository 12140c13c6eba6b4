// The Docker backend's mechanism per control: the container's settings (container_spec.cc) and
// what llm-sandbox-init does inside it. When a mechanism changes, its words here change with it.
#include "runtime/docker/docker_controls.h"

#include "policy/suggest.h"
#include "policy/tmpfs_options.h"
#include "policy/units.h"
#include "protocol/messages.h"
#include "runtime/init_controls.h"

namespace lsb::docker {
namespace {

bool Gvisor(const Policy& p) { return p.runtime == ContainerRuntime::kRunsc; }

// Under gVisor a control that needs Landlock or seccomp user notification is not enforced; the
// policy accepted that with container.gvisor_accept_weaker (the loader refuses runsc otherwise).
Enforcement GvisorLacks(const Policy& p, const std::string& what_is_lost) {
  return Accepted("under runtime runsc, gVisor has no " + what_is_lost +
                  "; the policy accepts this with container.gvisor_accept_weaker: true (" +
                  SourceOf(p, "container.gvisor_accept_weaker") + ")");
}

// gVisor (runsc) serves the box's sockets from its own network stack: a listening socket made in
// the container's host-side namespace is never seen by the box, so names cannot be filtered there.
Enforcement GvisorNoEgress() {
  return Refused("under runtime runsc the box's sockets are gVisor's own network stack, which the egress proxy's "
                 "socket cannot reach: network.allow/deny/secrets are refused; use runtime runc or the native "
                 "backend, or allow: [\"*\"] for the bridge");
}

Enforcement Build(const Policy& p) {
  const BuildSpec& b = p.build;
  // build.disk has a default the engine cannot honour either; one the policy writes is a promise.
  if (b.disk_set && (!b.apt.empty() || !b.pip.empty() || !b.run.empty()))
    return Refused("container.build.disk: the Docker backend cannot bound what a build step writes (the engine's "
                   "writable layer has no size limit on overlay2 without xfs project quotas); remove build.disk to "
                   "build on the engine's own storage, or use the native backend");
  return Enforced("built once before the first box into images of the engine tagged " +
                  std::string("build.llm-sandbox.local/env:<key>") +
                  " (one per step, create + commit, cached by the same chained keys), each step in a container "
                  "with network mode none whose only way out is the build's egress proxy (" +
                  (b.network_allow.empty() ? std::string("nothing") : JoinList(b.network_allow)) + "), at most " +
                  units::FormatDurationMs(b.timeout_ms) + " and " + units::FormatBytes(b.memory_bytes) +
                  " per step (under runc, whatever container.runtime the boxes use), with the engine's default "
                  "seccomp profile and capabilities; build.disk " + units::FormatBytes(b.disk_bytes) +
                  " is not enforced there (the engine's writable layer is on its own storage): a policy that "
                  "writes build.disk is refused");
}

Enforcement Tmpfs(const Policy& p, const std::string& path) {
  if (p.tmpfs.empty()) return Enforced("no HostConfig.Tmpfs: the program can write nowhere");
  for (const TmpfsMount& m : p.tmpfs)
    if (m.path == path)
      return Enforced("HostConfig.Tmpfs {\"" + m.path + "\": \"" +
                      FormatTmpfsOptions(m.size_bytes, m.mode, m.noexec, m.nosuid, m.nodev) +
                      "\"}; its pages count toward the container's memory limit");
  return Refused("no container.tmpfs entry has the path " + path);
}

Enforcement Mount(const Policy& p) {
  if (Gvisor(p))
    return Refused("not supported under container.runtime runsc (gVisor serves binds through its gofer; the view's "
                   "read-only and noexec flags are not verified there); use runc");
  return Enforced("the daemon, root beside a local engine, checks the source's real path against --mount-root at "
                  "each box start and makes an id-mapped, read-only, nosuid/nodev/noexec view of it (overlay: an "
                  "overlayfs on it whose upper is a tmpfs of the box's size), which the engine binds at the target; "
                  "init refuses to run unless each target is such a mount (docs/docker.md \"Host directories\")");
}

Enforcement Seccomp(const Policy& p) {
  if (p.seccomp != "default") return Refused("'" + p.seccomp + "': only the default profile is supported");
  const std::string refused =
      "refuses mount, unshare/setns, namespace flags of clone, ptrace, process_vm_readv/writev, bpf, keyctl, "
      "perf_event_open, userfaultfd, io_uring, open_by_handle_at, kexec and module loading, memfd_create, "
      "execveat(AT_EMPTY_PATH), the TIOCSTI ioctl, and raw, packet, vsock and alg sockets";
  if (Gvisor(p))
    return Enforced("gVisor filters system calls in its own kernel (no engine profile); inside, llm-sandbox-init's "
                    "filter (" + refused + ") is applied by gVisor's own seccomp implementation");
  return Enforced("HostConfig.SecurityOpt seccomp profile: an allowlist of every system call known at build time "
                  "except those llm-sandbox-init refuses silently, with the escape calls init watches let through "
                  "so that its filter refuses them with an escape_syscall alert; inside, llm-sandbox-init's filter " +
                  refused);
}

Enforcement Network(const Policy& p) {
  if (!p.network_enabled) {
    if (Gvisor(p))
      return Enforced("HostConfig.NetworkMode \"none\"; attempts fail but are not reported (no seccomp user "
                      "notification under gVisor)");
    return Enforced("HostConfig.NetworkMode \"none\"; llm-sandbox-init also answers connect/sendto with an error and "
                    "records a network_attempt alert with the address");
  }
  if (p.NetworkUnfiltered())
    return Enforced("the container joins the engine's bridge network (allow: [\"*\"]: outbound access as the host "
                    "allows it, no proxy)");
  if (Gvisor(p)) return GvisorNoEgress();
  return Enforced("HostConfig.NetworkMode \"none\" (its own namespace, loopback only), where the daemon, root on the "
                  "engine's host, makes the one listening socket: the egress proxy at " +
                  std::string(protocol::kEgressProxyAddress) +
                  ", served outside the container; init's connect watch and Landlock (TCP connect to the proxy's "
                  "port only) as on native (docs/network.md)");
}

// network.allow, deny and secrets: the proxy's rules, as on native, unless the box is on the bridge.
Enforcement NetworkFilter(const Policy& p) {
  if (p.NetworkUnfiltered()) return Enforced("not filtered (the bridge)");
  if (Gvisor(p)) return GvisorNoEgress();
  return Enforced("the same egress proxy as native");
}

Enforcement Resource(Control c, const Policy& p) {
  switch (c) {
    case Control::kCpu: return Enforced("HostConfig.NanoCpus " + std::to_string(static_cast<uint64_t>(p.cpu * 1e9)));
    case Control::kMemory:
      return Enforced("HostConfig.Memory " + std::to_string(p.memory_bytes) + "; the engine's OOMKilled flag is reported");
    case Control::kPids: return Enforced("HostConfig.PidsLimit " + std::to_string(p.pids));
    default: return Enforced(InitEnforces(c, p));
  }
}

}  // namespace

// One case per control, so the compiler names a control added without an answer here: a switch
// longer than a function should be for that reason.
Enforcement DescribeControl(const ControlRow& row, const Policy& p) {
  switch (row.control) {
    case Control::kImage:
      if (p.image == "host") return Refused("'host' is not a Docker image; name an image or use the native backend");
      return Enforced("the container is created from the engine's image '" + p.image +
                      "'; llm-sandbox-init is bind-mounted read-only and runs as PID 1");
    case Control::kPull:
      return Enforced("the engine pulls a missing image (the Docker backend's own store); requests cannot change it");
    case Control::kBuild: return Build(p);
    case Control::kReadOnly: return Enforced("HostConfig.ReadonlyRootfs: true; the engine masks /proc paths");
    case Control::kTmpfs: return Tmpfs(p, row.item);
    case Control::kMounts: return Mount(p);
    case Control::kUserNamespace:
      if (p.user_namespace)
        return Enforced("the engine's userns-remap when the daemon runs with it (detected at run time), plus the nested "
                        "user namespace llm-sandbox-init creates for each execution's view");
      return Enforced("no nested user namespace from llm-sandbox-init; the engine's userns-remap still applies if the "
                      "daemon has it; CapDrop ALL and no-new-privileges hold either way");
    case Control::kUser:
      if (p.uid == 0 || p.gid == 0) return Refused("uid/gid 0 is refused");
      return Enforced("Config.User \"" + std::to_string(p.uid) + ":" + std::to_string(p.gid) + "\"");
    case Control::kPrivileges:
      return Enforced("HostConfig.CapDrop [\"ALL\"] and SecurityOpt no-new-privileges; no host socket (never "
                      "docker.sock) is mounted");
    case Control::kSeccomp: return Seccomp(p);
    case Control::kNetworkEnabled: return Network(p);
    case Control::kNetworkAllow:
    case Control::kNetworkDeny:
    case Control::kNetworkSecrets: return NetworkFilter(p);
    case Control::kCommandsAllow:
      if (Gvisor(p)) return GvisorLacks(p, "Landlock, so any binary in the image can be executed");
      return Enforced(LandlockExecRules() + " (applied by llm-sandbox-init inside the container)");
    case Control::kCommandsDeny:
      if (Gvisor(p))
        return GvisorLacks(p, "Landlock or seccomp user notification, so listed paths can run and are not reported");
      return Enforced(InitEnforces(row.control, p));
    case Control::kLanguages:
    case Control::kCpu:
    case Control::kMemory:
    case Control::kPids:
    case Control::kTimeout:
    case Control::kTimeoutGrace:
    case Control::kOutput:
    case Control::kOpenFiles:
    case Control::kFileSize:
    case Control::kEnv:
    case Control::kWorkdir:
    case Control::kAlerts:
    case Control::kSessionSetup: return Resource(row.control, p);
    case Control::kTrace:
      if (Gvisor(p))
        return GvisorLacks(p, "seccomp user notification, so exec and network attempts are not reported; OOM, pids, "
                              "timeout and output alerts remain");
      return Enforced(InitEnforces(row.control, p));
    case Control::kBackend:
      return Enforced(p.backend == BackendKind::kNative ? "not selected: this policy runs on the native backend only"
                                                        : "the Docker Engine API over its unix socket (or DOCKER_HOST)");
    case Control::kRuntime:
      if (Gvisor(p) && !p.gvisor_accept_weaker)
        return Refused("runsc: gVisor has no Landlock and no seccomp user notification, so commands.allow/deny are not "
                       "enforced inside the box and exec/network attempts are not reported; set "
                       "container.gvisor_accept_weaker: true to accept that");
      return Enforced("HostConfig.Runtime \"" + Spelling(p.runtime) + "\"" +
                      (Gvisor(p) ? " (gVisor: a user-space kernel between the program and the host)" : ""));
    case Control::kGvisorAcceptWeaker:
      if (Gvisor(p))
        return Enforced("accepted: under runsc, commands are not enforced inside the box and exec/connect attempts "
                        "are not reported (those rows say NOT ENFORCED)");
      return Enforced("not applicable: the boxes run under runc, where every control is enforced as written");
  }
  return Refused("unknown control");
}

}  // namespace lsb::docker
