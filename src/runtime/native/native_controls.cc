// The native backend's mechanism per control. They state what native_backend.cc, launcher.cc and
// llm-sandbox-init do (DESIGN §3); when a mechanism changes, its words here change with it.
#include "runtime/native/native_controls.h"

#include "policy/suggest.h"
#include "policy/units.h"
#include "protocol/messages.h"
#include "runtime/init_controls.h"

namespace lsb::native {
namespace {

Enforcement Image(const Policy& p) {
  if (p.image == "host")
    return Enforced("root = the host's system directories (/usr, /bin, /lib*, /etc...) bind-mounted read-only into "
                    "the box's new mount namespace; nothing else of the host is visible");
  return Enforced("root = what images.yaml maps '" + p.image +
                  "' to ('NAME: host', 'NAME: /path/to/rootfs' or an alias 'NAME: OTHER-IMAGE'), else the image's "
                  "layers from the image store as a read-only overlayfs, mounted read-only; an image found nowhere "
                  "is an error at run time, never silently replaced");
}

Enforcement Pull(const Policy& p) {
  if (p.pull == "never")
    return Enforced("an image neither the image map nor the image store has is an error naming "
                    "`llm-sandbox image pull|import`; nothing is fetched");
  if (p.pull == "always")
    return Enforced("the image is pulled from its registry before every box (a newer manifest for the tag replaces "
                    "the stored one); the image map's host/directory entries need no pull");
  return Enforced("an image the image map and the image store lack is pulled from its registry when a box first "
                  "needs it");
}

Enforcement Build(const Policy& p) {
  const BuildSpec& b = p.build;
  return Enforced(
      "built once before the first box into an image derived from " + p.image +
      " (one cached layer per step, keyed by the base's digest and the steps so far), in a build box: the "
      "image's layers under a writable upper layer, root of its own user namespace, egress only through "
      "the proxy to build.network.allow (" + (b.network_allow.empty() ? std::string("nothing") : JoinList(b.network_allow)) +
      "), at most " + units::FormatDurationMs(b.timeout_ms) + " and " + units::FormatBytes(b.memory_bytes) +
      " per step, each step's writes on a filesystem of build.disk " + units::FormatBytes(b.disk_bytes) +
      " (a loop-mounted ext4 image: past it writes fail), its process with no_new_privs, init's escape seccomp "
      "filter and only CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID, CAP_SETUID, CAP_SETGID; the "
      "program then runs on it under this policy's confinement");
}

Enforcement Mount(const Policy& p, const std::string& target) {
  for (const HostMount& m : p.mounts) {
    if (m.target != target) continue;
    std::string view = m.mode == "overlay"
        ? "an overlayfs with the host directory as its read-only lower layer and its upper on a tmpfs of the box of " +
              units::FormatBytes(m.size_bytes) + " (full: ENOSPC; nothing written reaches the host)"
        : std::string("a read-only bind (read-only, nosuid, nodev, noexec)");
    return Enforced("bound only when the source's real path is under a root the operator allowed (--mount-root), "
                    "opened without following symlinks, id-mapped to the program's uid/gid (the daemon as root): " +
                    view + "; Landlock grants the target only");
  }
  return Refused("no container.mounts entry has the target " + target);
}

Enforcement Network(const Policy& p) {
  if (!p.network_enabled)
    return Enforced("a new, empty network namespace (no interface but a down loopback); llm-sandbox-init also "
                    "answers connect/sendto with an error and records a network_attempt alert with the address");
  return Enforced("the box's own network namespace with only loopback, where the host made the one listening socket: "
                  "the egress proxy at " + std::string(protocol::kEgressProxyAddress) +
                  " (HTTP_PROXY/HTTPS_PROXY in the program's environment), served outside the box; no route, no DNS, "
                  "no other address (docs/network.md)");
}

}  // namespace

// One case per control, so the compiler names a control added without an answer here: a switch
// longer than a function should be for that reason.
Enforcement DescribeControl(const ControlRow& row, const Policy& p) {
  switch (row.control) {
    case Control::kImage: return Image(p);
    case Control::kPull: return Pull(p);
    case Control::kBuild: return Build(p);
    case Control::kReadOnly:
      return Enforced("every mount of the root is read-only (writes fail with EROFS); /proc paths the kernel exposes "
                      "(kcore, keys, sysrq-trigger...) are masked as runc masks them");
    case Control::kTmpfs:
      if (p.tmpfs.empty()) return Enforced("no writable mount: the program can write nowhere");
      return Enforced("mounted by llm-sandbox-init in the box's mount namespace with size, mode, noexec, nosuid and "
                      "nodev; full -> ENOSPC; its pages count toward resources.memory; fresh for every box");
    case Control::kMounts: return Mount(p, row.item);
    case Control::kUserNamespace:
      return Enforced(std::string("always: clone() into new user, mount, pid, net, ipc, uts and cgroup namespaces, with "
                                  "the box's ids mapped to an unprivileged host id, so nothing in the box is privileged "
                                  "on the host") +
                      (p.user_namespace ? "" : " (false cannot turn this off: it is how the native backend runs without "
                                               "privilege)"));
    case Control::kUser:
      if (p.uid == 0 || p.gid == 0) return Refused("the program must not run as uid/gid 0");
      return Enforced("the program runs as " + std::to_string(p.uid) + ":" + std::to_string(p.gid) +
                      " inside the box's user namespace, which maps it to an unprivileged host id; never 0");
    case Control::kPrivileges:
      return Enforced("the box holds no capability in the host's user namespace; llm-sandbox-init sets no_new_privs "
                      "before exec, so set-uid files grant nothing");
    case Control::kSeccomp:
      if (p.seccomp != "default") return Refused("'" + p.seccomp + "': only the default profile exists");
      return Enforced("llm-sandbox-init installs the filter before exec; it refuses mount, unshare/setns, namespace "
                      "flags of clone, ptrace, process_vm_readv/writev, bpf, keyctl, perf_event_open, userfaultfd, "
                      "io_uring, open_by_handle_at, kexec and module loading, memfd_create, execveat(AT_EMPTY_PATH), "
                      "the TIOCSTI ioctl, and raw, packet, vsock and alg sockets");
    case Control::kNetworkEnabled: return Network(p);
    case Control::kNetworkAllow:
      return Enforced("the egress proxy resolves each name itself and connects only to the address it checked; a name "
                      "is reachable when an entry matches and no network.deny entry does; loopback, link-local, "
                      "private, multicast and the host's own addresses only when an address entry names them; CONNECT "
                      "carries TLS only, with the SNI equal to the CONNECT name");
    case Control::kNetworkDeny: return Enforced("wins over network.allow, names and addresses");
    case Control::kNetworkSecrets:
      return Enforced("the egress proxy adds each header to plain-HTTP requests for its host only, the value filled at "
                      "box start from --secrets-file or the daemon's environment (a missing variable refuses the box) "
                      "and masked in what that host sends back; it never enters the box, events or logs. Over HTTPS "
                      "the proxy terminates TLS with a per-box CA whose certificate (not key) the box trusts, and "
                      "verifies the upstream's certificate against the host's store (docs/network.md)");
    case Control::kCommandsAllow:
      if (row.item.empty()) return Enforced(LandlockExecRules());
      return Enforced("expanded by the loader into /usr/bin/NAME and /bin/NAME per command, then resolved in the box "
                      "like a hand-written entry (realpath; a name the root lacks is skipped); " + LandlockExecRules());
    case Control::kCommandsDeny:
      return Enforced(InitEnforces(row.control, p));
    case Control::kCpu:
      return Enforced("cgroup v2 cpu.max, or v1 cpu.cfs_quota_us/cpu.cfs_period_us, whichever the host mounts "
                      "(detected at run time)");
    case Control::kMemory:
      return Enforced("cgroup v2 memory.max, or v1 memory.limit_in_bytes (detected at run time); tmpfs pages count; "
                      "an OOM kill is reported as OOM");
    case Control::kPids:
      return Enforced("cgroup pids.max (v2 or v1), counting llm-sandbox-init; a fork past it fails with EAGAIN and is "
                      "reported (pids_limit)");
    case Control::kLanguages:
    case Control::kTimeout:
    case Control::kTimeoutGrace:
    case Control::kOutput:
    case Control::kOpenFiles:
    case Control::kFileSize:
    case Control::kEnv:
    case Control::kWorkdir:
    case Control::kAlerts:
    case Control::kSessionSetup:
    case Control::kTrace:
      return Enforced(InitEnforces(row.control, p));
    case Control::kBackend:
      return Enforced(p.backend == BackendKind::kDocker ? "not selected: this policy runs on the docker backend only"
                                                        : "needs no daemon: unprivileged user namespaces on the host");
    case Control::kRuntime:
      if (p.runtime == ContainerRuntime::kRunsc)
        return Refused("runsc is a Docker runtime; the native backend does not run gVisor (use backend: docker)");
      return Enforced("not applicable: runc/runsc choose a Docker runtime");
    case Control::kGvisorAcceptWeaker:
      return Enforced("not applicable: the native backend does not run gVisor; every control is enforced as written");
  }
  return Refused("unknown control");
}

}  // namespace lsb::native
