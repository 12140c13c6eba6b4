// The words of `policy explain`. They state the design both backends implement (docs/policy.md,
// DESIGN §3); when a mechanism changes, this file changes with it.
#include "policy/explain.h"

#include <nlohmann/json.hpp>

#include "policy/command_presets.h"
#include "policy/suggest.h"
#include "protocol/messages.h"
#include "policy/tmpfs_options.h"
#include "policy/units.h"

namespace lsb {
namespace {

std::string Source(const Policy& p, const std::string& key) {
  if (key.empty()) return "(built in)";
  auto it = p.positions.find(key);
  return it == p.positions.end() ? "(default)" : it->second.ToString();
}

std::string Bytes(uint64_t b) { return units::FormatBytes(b) + " (" + std::to_string(b) + " bytes)"; }

std::string List(const std::vector<std::string>& items) {
  if (items.empty()) return "(none)";
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string Octal(uint32_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", mode);
  return buf;
}

Enforcement Yes(std::string how) { return Enforcement{true, std::move(how)}; }
Enforcement No(std::string why) { return Enforcement{false, std::move(why)}; }

// gVisor (runsc) serves the box's sockets from its own network stack: a listening socket made in
// the container's host-side namespace is never seen by the box, so names cannot be filtered there.
constexpr const char* kGvisorNoEgress =
    "under runtime runsc the box's sockets are gVisor's own network stack, which the egress proxy's socket cannot "
    "reach: network.allow/deny/secrets are refused; use runtime runc or the native backend, or allow: [\"*\"] for "
    "the bridge";

class Explainer {
 public:
  explicit Explainer(const Policy& p) : p_(p), gvisor_(p.runtime == "runsc") {}

  std::vector<ControlExplanation> Build() {
    Image();
    BuildSteps();
    ReadOnly();
    Tmpfs();
    UserNamespace();
    User();
    Privileges();
    Seccomp();
    Network();
    Commands();
    Languages();
    Resources();
    Environment();
    Monitoring();
    Runtime();
    return std::move(out_);
  }

 private:
  void Add(std::string control, std::string setting, const std::string& key, Enforcement native, Enforcement docker) {
    out_.push_back({std::move(control), std::move(setting), Source(p_, key), std::move(native), std::move(docker)});
  }

  // container.build: what is baked into the derived image, and how the build is confined.
  void BuildSteps() {
    const BuildSpec& b = p_.build;
    if (b.empty()) return;
    std::string steps;
    auto part = [&](const std::string& name, const std::vector<std::string>& items) {
      if (items.empty()) return;
      if (!steps.empty()) steps += "; ";
      steps += name + ": " + JoinList(items);
    };
    part("apt", b.apt);
    part("apt_sources", b.apt_sources);
    part("pip", b.pip);
    std::vector<std::string> files;
    for (const BuildFile& f : b.files) files.push_back(f.source + " -> " + f.target);
    part("files", files);
    part("run", b.run);
    Add("container.build", steps, "container.build",
        Yes("built once before the first box into an image derived from " + p_.image +
            " (one cached layer per step, keyed by the base's digest and the steps so far), in a build box: the "
            "image's layers under a writable upper layer, root of its own user namespace, egress only through "
            "the proxy to build.network.allow (" + (b.network_allow.empty() ? std::string("nothing") : JoinList(b.network_allow)) +
            "), at most " + units::FormatDurationMs(b.timeout_ms) + " and " + units::FormatBytes(b.memory_bytes) +
            " per step, each step's writes on a filesystem of build.disk " + units::FormatBytes(b.disk_bytes) +
            " (a loop-mounted ext4 image: past it writes fail), its process with no_new_privs, init's escape seccomp "
            "filter and only CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID, CAP_SETUID, CAP_SETGID; the "
            "program then runs on it under this policy's confinement"),
        Yes("built once before the first box into images of the engine tagged " +
                  std::string("build.llm-sandbox.local/env:<key>") +
                  " (one per step, create + commit, cached by the same chained keys), each step in a container "
                  "with network mode none whose only way out is the build's egress proxy (" +
                  (b.network_allow.empty() ? std::string("nothing") : JoinList(b.network_allow)) + "), at most " +
                  units::FormatDurationMs(b.timeout_ms) + " and " + units::FormatBytes(b.memory_bytes) +
                  " per step (under runc, whatever container.runtime the boxes use), with the engine's default seccomp "
                  "profile and capabilities; build.disk " + units::FormatBytes(b.disk_bytes) +
                  " is not enforced there (the engine's writable layer is on its own storage): a policy that writes "
                  "build.disk is refused"));
  }

  // Under gVisor a control that needs Landlock or seccomp user notification is not enforced; the
  // policy accepted that with container.gvisor_accept_weaker (the loader refuses runsc otherwise).
  Enforcement Gvisor(const std::string& what_is_lost) const {
    return No("under runtime runsc, gVisor has no " + what_is_lost +
              "; the policy accepts this with container.gvisor_accept_weaker: true (" +
              Source(p_, "container.gvisor_accept_weaker") + ")");
  }

  void Image() {
    Enforcement native = p_.image == "host"
        ? Yes("root = the host's system directories (/usr, /bin, /lib*, /etc...) bind-mounted read-only into "
              "the box's new mount namespace; nothing else of the host is visible")
        : Yes("root = what images.yaml maps '" + p_.image + "' to ('NAME: host', 'NAME: /path/to/rootfs' or an alias "
              "'NAME: OTHER-IMAGE'), else the image's layers from the image store as a read-only overlayfs, "
              "mounted read-only; an image found nowhere is an error at run time, never silently replaced");
    Enforcement docker = p_.image == "host"
        ? No("'host' is not a Docker image; name an image or use the native backend")
        : Yes("the container is created from the engine's image '" + p_.image +
              "'; llm-sandbox-init is bind-mounted read-only and runs as PID 1");
    Add("container.image", p_.image, "container.image", native, docker);
    Add("container.pull", p_.pull, "container.pull",
        Yes(p_.pull == "never"   ? "an image neither the image map nor the image store has is an error naming "
                                   "`llm-sandbox image pull|import`; nothing is fetched"
            : p_.pull == "always" ? "the image is pulled from its registry before every box (a newer manifest for "
                                    "the tag replaces the stored one); the image map's host/directory entries need no pull"
                                  : "an image the image map and the image store lack is pulled from its registry when a "
                                    "box first needs it"),
        Yes("the engine pulls a missing image (the Docker backend's own store); requests cannot change it"));
  }

  void ReadOnly() {
    Add("container.read_only", "true (always)", "container.read_only",
        Yes("every mount of the root is read-only (writes fail with EROFS); /proc paths the kernel exposes "
            "(kcore, keys, sysrq-trigger...) are masked as runc masks them"),
        Yes("HostConfig.ReadonlyRootfs: true; the engine masks /proc paths"));
  }

  void Tmpfs() {
    if (p_.tmpfs.empty()) {
      Add("container.tmpfs", "(none)", "container.tmpfs",
          Yes("no writable mount: the program can write nowhere"),
          Yes("no HostConfig.Tmpfs: the program can write nowhere"));
      return;
    }
    for (const auto& m : p_.tmpfs) {
      std::string setting = m.path + " size=" + units::FormatBytes(m.size_bytes) + " mode=" + Octal(m.mode) +
                            " noexec,nosuid,nodev";
      std::string docker_opts = FormatTmpfsOptions(m.size_bytes, m.mode, m.noexec, m.nosuid, m.nodev);
      Add("container.tmpfs " + m.path, setting, "container.tmpfs." + m.path,
          Yes("mounted by llm-sandbox-init in the box's mount namespace with size, mode, noexec, nosuid and "
              "nodev; full -> ENOSPC; its pages count toward resources.memory; fresh for every box"),
          Yes("HostConfig.Tmpfs {\"" + m.path + "\": \"" + docker_opts +
              "\"}; its pages count toward the container's memory limit"));
    }
  }

  void UserNamespace() {
    std::string setting = p_.user_namespace ? "true" : "false";
    Enforcement native = Yes(
        std::string("always: clone() into new user, mount, pid, net, ipc, uts and cgroup namespaces, with the box's ids "
                    "mapped to an unprivileged host id, so nothing in the box is privileged on the host") +
        (p_.user_namespace ? "" : " (false cannot turn this off: it is how the native backend runs without privilege)"));
    Enforcement docker = p_.user_namespace
        ? Yes("the engine's userns-remap when the daemon runs with it (detected at run time), plus the nested user "
              "namespace llm-sandbox-init creates for each execution's view")
        : Yes("no nested user namespace from llm-sandbox-init; the engine's userns-remap still applies if the daemon "
              "has it; CapDrop ALL and no-new-privileges hold either way");
    Add("container.user_namespace", setting, "container.user_namespace", native, docker);
  }

  void User() {
    std::string ids = std::to_string(p_.uid) + ":" + std::to_string(p_.gid);
    Add("container.user", ids, "container.user",
        Yes("the program runs as " + ids + " inside the box's user namespace, which maps it to an unprivileged "
            "host id; never 0"),
        Yes("Config.User \"" + ids + "\""));
  }

  void Privileges() {
    Add("privileges", "none (always)", "",
        Yes("the box holds no capability in the host's user namespace; llm-sandbox-init sets no_new_privs before "
            "exec, so set-uid files grant nothing"),
        Yes("HostConfig.CapDrop [\"ALL\"] and SecurityOpt no-new-privileges; no host socket (never docker.sock) is "
            "mounted"));
  }

  void Seccomp() {
    const std::string refused =
        "refuses mount, unshare/setns, namespace flags of clone, ptrace, process_vm_readv/writev, bpf, keyctl, "
        "perf_event_open, userfaultfd, io_uring, open_by_handle_at, kexec and module loading, memfd_create, "
        "execveat(AT_EMPTY_PATH), the TIOCSTI ioctl, and raw, packet, vsock and alg sockets";
    Enforcement docker = gvisor_
        ? Yes("gVisor filters system calls in its own kernel (no engine profile); inside, llm-sandbox-init's "
              "filter (" + refused + ") is applied by gVisor's own seccomp implementation")
        : Yes("HostConfig.SecurityOpt seccomp profile: an allowlist of every system call known at build time "
              "except those llm-sandbox-init refuses silently, with the escape calls init watches let through "
              "so that its filter refuses them with an escape_syscall alert; inside, llm-sandbox-init's filter " +
              refused);
    Add("container.seccomp", p_.seccomp, "container.seccomp",
        Yes("llm-sandbox-init installs the filter before exec; it " + refused), docker);
  }

  void Network() {
    if (!p_.network_enabled) {
      Enforcement docker = gvisor_
          ? Yes("HostConfig.NetworkMode \"none\"; attempts fail but are not reported (no seccomp user notification "
                "under gVisor)")
          : Yes("HostConfig.NetworkMode \"none\"; llm-sandbox-init also answers connect/sendto with an error and "
                "records a network_attempt alert with the address");
      Add("network.enabled", "false", "network.enabled",
          Yes("a new, empty network namespace (no interface but a down loopback); llm-sandbox-init also answers "
              "connect/sendto with an error and records a network_attempt alert with the address"),
          docker);
      return;
    }
    const bool open = p_.NetworkUnfiltered();
    Add("network.enabled", "true", "network.enabled",
        Yes("the box's own network namespace with only loopback, where the host made the one listening socket: "
            "the egress proxy at " + std::string(protocol::kEgressProxyAddress) + " (HTTP_PROXY/HTTPS_PROXY in the program's "
            "environment), served outside the box; no route, no DNS, no other address (docs/network.md)"),
        open ? Yes("the container joins the engine's bridge network (allow: [\"*\"]: outbound access as the host "
                   "allows it, no proxy)")
        : gvisor_ ? No(kGvisorNoEgress)
                  : Yes("HostConfig.NetworkMode \"none\" (its own namespace, loopback only), where the daemon, root on "
                        "the engine's host, makes the one listening socket: the egress proxy at " +
                        std::string(protocol::kEgressProxyAddress) +
                        ", served outside the container; init's connect watch and Landlock (TCP connect to the "
                        "proxy's port only) as on native (docs/network.md)"));
    const Enforcement docker_filter =
        open ? Yes("not filtered (the bridge)") : gvisor_ ? No(kGvisorNoEgress) : Yes("the same egress proxy as native");
    Add("network.allow", p_.network_allow.empty() ? std::string("[] (nothing)") : JoinList(p_.network_allow),
        "network.allow",
        Yes("the egress proxy resolves each name itself and connects only to the address it checked; a name is "
            "reachable when an entry matches and no network.deny entry does; loopback, link-local, private, "
            "multicast and the host's own addresses only when an address entry names them; CONNECT carries TLS "
            "only, with the SNI equal to the CONNECT name"),
        docker_filter);
    if (!p_.network_deny.empty())
      Add("network.deny", JoinList(p_.network_deny), "network.deny", Yes("wins over network.allow, names and addresses"),
          docker_filter);
    if (!p_.network_secrets.empty())
      Add("network.secrets", std::to_string(p_.network_secrets.size()) + " header(s)", "network.secrets",
          Yes("the egress proxy adds each header to plain-HTTP requests for its host only, the value filled at box "
              "start from --secrets-file or the daemon's environment (a missing variable refuses the box) and "
              "masked in what that host sends back; it never enters the box, events or logs. Over HTTPS the "
              "proxy terminates TLS with a per-box CA whose certificate (not key) the box trusts, and verifies "
              "the upstream's certificate against the host's store (docs/network.md)"),
          docker_filter);
  }

  void Commands() {
    std::string landlock =
        "Landlock: EXECUTE and READ_FILE granted per allowed file plus the ELF interpreter (ld.so) it needs; the "
        "bin directories get only READ_DIR, so every other binary is unreadable and cannot run, not even as "
        "'ld.so /bin/sh'; writable mounts are noexec; memfd and execveat(AT_EMPTY_PATH) exec are refused by seccomp";
    Enforcement docker_allow = gvisor_ ? Gvisor("Landlock, so any binary in the image can be executed")
                                       : Yes(landlock + " (applied by llm-sandbox-init inside the container)");
    Add("commands.allow", AllowSetting(), "commands.allow", Yes(landlock), docker_allow);
    for (const auto& name : p_.allow_presets) {
      const CommandPreset* preset = FindCommandPreset(name);
      if (!preset) continue;
      Add("commands.allow " + name, PresetSetting(*preset), "commands.allow." + name,
          Yes("expanded by the loader into /usr/bin/NAME and /bin/NAME per command, then resolved in the box like "
              "a hand-written entry (realpath; a name the root lacks is skipped); " + landlock),
          docker_allow);
    }
    std::string watch =
        "not in commands.allow, so Landlock refuses it; seccomp user notification also watches execve/execveat: "
        "an exec of a listed path fails with EACCES and raises a denied_exec alert naming it";
    Add("commands.deny", List(p_.deny), "commands.deny", Yes(watch),
        gvisor_ ? Gvisor("Landlock or seccomp user notification, so listed paths can run and are not reported")
                : Yes(watch));
  }

  // The entries as written: hand-written paths, then the presets by name (their paths in rows of
  // their own). Without presets, every path.
  std::string AllowSetting() const {
    if (p_.allow_presets.empty()) return List(p_.allow);
    std::vector<std::string> written;
    for (size_t i = 0; i < p_.allow.size() && p_.positions.count("commands.allow[" + std::to_string(i) + "]"); ++i)
      written.push_back(p_.allow[i]);
    for (const auto& name : p_.allow_presets) written.push_back(name);
    return List(written);
  }

  std::string PresetSetting(const CommandPreset& preset) const {
    std::vector<std::string> denied;
    for (const auto& command : preset.commands)
      for (const auto& dir : {"/usr/bin/", "/bin/"})
        if (p_.Denies(dir + command)) denied.push_back(dir + command);
    return preset.summary + ": " + List(preset.commands) + " (" + std::to_string(preset.commands.size()) +
           " commands" + (denied.empty() ? "" : "; denied by commands.deny, so left out: " + List(denied)) + ")";
  }

  void Languages() {
    std::string setting = "default " + p_.default_language;
    for (const auto& [name, lang] : p_.languages) {
      std::string argv;
      for (const auto& a : lang.command) argv += (argv.empty() ? "" : " ") + a;
      setting += "; " + name + ": " + argv + " (" + lang.file_name + ")";
    }
    const std::string how =
        "not a kernel control: picks the argv a run uses; the interpreter (command[0]) must pass commands.allow, "
        "or the run is refused before it starts";
    Add("languages", setting, "languages", Yes(how), Yes(how));
  }

  void Resources() {
    Add("resources.cpu", units::FormatCpu(p_.cpu) + " cores", "resources.cpu",
        Yes("cgroup v2 cpu.max, or v1 cpu.cfs_quota_us/cpu.cfs_period_us, whichever the host mounts (detected at "
            "run time)"),
        Yes("HostConfig.NanoCpus " + std::to_string(static_cast<uint64_t>(p_.cpu * 1e9))));
    Add("resources.memory", Bytes(p_.memory_bytes), "resources.memory",
        Yes("cgroup v2 memory.max, or v1 memory.limit_in_bytes (detected at run time); tmpfs pages count; an OOM "
            "kill is reported as OOM"),
        Yes("HostConfig.Memory " + std::to_string(p_.memory_bytes) + "; the engine's OOMKilled flag is reported"));
    Add("resources.pids", std::to_string(p_.pids), "resources.pids",
        Yes("cgroup pids.max (v2 or v1), counting llm-sandbox-init; a fork past it fails with EAGAIN and is "
            "reported (pids_limit)"),
        Yes("HostConfig.PidsLimit " + std::to_string(p_.pids)));
    const std::string timeout =
        "wall clock kept by llm-sandbox-init: at the limit every process of the box gets SIGTERM, then SIGKILL after "
        "resources.timeout_grace (orphans and programs that ignore SIGTERM included), and the run is reported as a "
        "timeout with exit code 124; the host destroys the box if init does not answer";
    Add("resources.timeout", units::FormatDurationMs(p_.timeout_ms), "resources.timeout", Yes(timeout), Yes(timeout));
    const std::string grace =
        p_.timeout_grace_ms == 0
            ? std::string("no grace: SIGKILL to every process of the box at the timeout")
            : "SIGTERM to every process of the box at the timeout, SIGKILL " + units::FormatDurationMs(p_.timeout_grace_ms) +
                  " later (llm-sandbox-init); what the program writes meanwhile is kept";
    Add("resources.timeout_grace", units::FormatDurationMs(p_.timeout_grace_ms), "resources.timeout_grace", Yes(grace),
        Yes(grace));
    const std::string output =
        "llm-sandbox-init counts stdout and stderr together; past the cap the program is killed, the output is "
        "truncated and the result flagged (output_limit)";
    Add("resources.output", Bytes(p_.output_bytes), "resources.output", Yes(output), Yes(output));
    const std::string nofile = "RLIMIT_NOFILE " + std::to_string(p_.open_files) +
                               " set by llm-sandbox-init before exec; one more open fails with EMFILE";
    Add("resources.open_files", std::to_string(p_.open_files), "resources.open_files", Yes(nofile), Yes(nofile));
    const std::string fsize = "RLIMIT_FSIZE " + std::to_string(p_.file_size_bytes) +
                              " set by llm-sandbox-init before exec (and RLIMIT_CORE 0); a write past it fails "
                              "with EFBIG";
    Add("resources.file_size", Bytes(p_.file_size_bytes), "resources.file_size", Yes(fsize), Yes(fsize));
  }

  void Environment() {
    std::string env;
    for (const auto& [k, v] : p_.env) env += (env.empty() ? "" : ", ") + k + "=" + v;
    const std::string how_env =
        "llm-sandbox-init builds the program's environment from these; nothing of the host's environment is "
        "passed through";
    Add("container.env", env.empty() ? "(none)" : env, "container.env", Yes(how_env), Yes(how_env));
    const std::string how_wd = "llm-sandbox-init changes to it before exec; a missing directory fails the run";
    Add("container.workdir", p_.workdir, "container.workdir", Yes(how_wd), Yes(how_wd));
  }

  void Monitoring() {
    std::string how = p_.trace
        ? "every exec and connect/sendto/bind is reported as a trace event (seccomp user notification, watching "
          "only: the kernel layers decide), besides the alerts"
        : "alerts only: denied exec, network attempt, refused escape syscall, OOM kill, pids limit, timeout, "
          "output flood";
    Add("monitoring.trace", p_.trace ? "true" : "false", "monitoring.trace", Yes(how),
        gvisor_ ? Gvisor("seccomp user notification, so exec and network attempts are not reported; OOM, pids, "
                         "timeout and output alerts remain")
                : Yes(how));
  }

  void Runtime() {
    Add("backend", p_.backend, "backend",
        p_.backend == "docker" ? Yes("not selected: this policy runs on the docker backend only")
                               : Yes("needs no daemon: unprivileged user namespaces on the host"),
        p_.backend == "native" ? Yes("not selected: this policy runs on the native backend only")
                               : Yes("the Docker Engine API over its unix socket (or DOCKER_HOST)"));
    Add("container.runtime", p_.runtime, "container.runtime",
        gvisor_ ? No("runsc is a Docker runtime; the native backend does not run gVisor")
                : Yes("not applicable: runc/runsc choose a Docker runtime"),
        Yes("HostConfig.Runtime \"" + p_.runtime + "\"" +
            (gvisor_ ? " (gVisor: a user-space kernel between the program and the host)" : "")));
  }

  const Policy& p_;
  bool gvisor_;
  std::vector<ControlExplanation> out_;
};

}  // namespace

std::vector<ControlExplanation> ExplainPolicy(const Policy& policy) { return Explainer(policy).Build(); }

std::string FormatExplanation(const Policy& policy) {
  std::string out = "policy " + policy.name + " (" + policy.source_file + ")\n";
  if (!policy.description.empty()) {
    out += "description: " + policy.description +
           (policy.positions.count("description") ? "" : "  [(built in): policy/builtin_descriptions.cc]") + "\n";
  }
  out += "backend: " + policy.backend + ", runtime: " + policy.runtime +
         ". For each control: its setting and where it was set, then how the native and the Docker backend "
         "enforce it.\n";
  for (const auto& c : ExplainPolicy(policy)) {
    out += "\n" + c.control + " = " + c.setting + "  [" + c.source + "]\n";
    out += "  native: " + std::string(c.native.enforced ? "" : "NOT ENFORCED: ") + c.native.how + "\n";
    out += "  docker: " + std::string(c.docker.enforced ? "" : "NOT ENFORCED: ") + c.docker.how + "\n";
  }
  return out;
}

nlohmann::json ExplanationJson(const Policy& policy) {
  nlohmann::json controls = nlohmann::json::array();
  for (const auto& c : ExplainPolicy(policy)) {
    controls.push_back({{"control", c.control},
                        {"setting", c.setting},
                        {"source", c.source},
                        {"native", {{"enforced", c.native.enforced}, {"how", c.native.how}}},
                        {"docker", {{"enforced", c.docker.enforced}, {"how", c.docker.how}}}});
  }
  return {{"policy", policy.name},
          {"description", policy.description},
          {"file", policy.source_file},
          {"backend", policy.backend},
          {"runtime", policy.runtime},
          {"controls", controls}};
}

}  // namespace lsb
