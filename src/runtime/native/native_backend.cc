#include "runtime/native/native_backend.h"


#include <linux/capability.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <optional>

#include "base/capabilities.h"
#include "base/io.h"
#include "base/random_id.h"
#include "protocol/frame.h"
#include "runtime/image_map.h"
#include "runtime/native/box_cgroup.h"
#include "runtime/native/box_root.h"
#include "runtime/native/cgroup_layout.h"
#include "runtime/native/init_binary.h"
#include "runtime/native/launcher.h"
#include "runtime/host_mount.h"
#include "runtime/mount_roots.h"
#include "runtime/native/native_box.h"
#include "runtime/native/native_controls.h"
#include "runtime/native/workdir_check.h"
#include "runtime/runner.h"
#include "egress/box_egress.h"
#include "egress/egress_proxy.h"
#include "egress/secrets.h"
#include "image/store_puller.h"

namespace lsb::native {
namespace {

std::string NewBoxId() { return RandomHex("native-", 6); }

bool Privileged() { return ::geteuid() == 0; }

// How many boxes a fork server's zygote may hold at once (its share of the per-user limits is a
// box's times this, ZygoteUserLimits): beyond every pool and concurrency bound of the daemon.
constexpr uint32_t kForkServerBoxes = 256;
// Fork servers at once (one per init setup and owner), each an interpreter and a box. Past it, the
// least recently used one holding no box goes; when each holds boxes, a box starts on its own.
constexpr size_t kMaxForkServers = 8;
constexpr std::chrono::seconds kForkServerIdleEviction{10};  // how long a server must be unused to be pushed out

bool CanLowerOomScore() {
  // Lowering an oom_score_adj needs CAP_SYS_RESOURCE, which some containers drop even for root.
  static const bool can = HasEffectiveCapability(CAP_SYS_RESOURCE);  // capabilities do not grow
  return can;
}

// init must survive the OOM killer so it can report; the program raises its own score. Best
// effort by design (see Explain: init.oom_protection): without CAP_SYS_RESOURCE the program's
// own +1000 is what steers the OOM killer away from init.
Status ProtectInitFromOom(pid_t init) {
  if (!CanLowerOomScore()) return OkStatus();
  auto st = WriteFile("/proc/" + std::to_string(init) + "/oom_score_adj", "-1000");
  if (!st.ok()) return st.error().Wrap("protect init from the OOM killer");
  return OkStatus();
}

uint32_t OwnerBase(const NativeOptions& o) {
  return o.owner_id_base ? o.owner_id_base : o.id_base + kDefaultIdCount;
}

IdMapPlan PlanFor(const NativeOptions& o) {
  return PlanIdMap(Privileged(), ::geteuid(), ::getegid(), o.id_base);
}

CgroupLimits LimitsFor(const Policy& p, const NativeOptions& o) {
  CgroupLimits l;
  l.memory_bytes = p.memory_bytes;
  l.cpu = p.cpu;
  // init and its helper threads count against pids.max too.
  l.pids = p.pids > 0 ? static_cast<uint64_t>(p.pids) + o.init_pids_reserve : 0;
  return l;
}

}  // namespace

NativeBackend::NativeBackend(NativeOptions opts) : opts_(std::move(opts)), images_(opts_.images_file) {
  if (opts_.font_cache) fonts_.Start();  // in the background: the daemon's start does not wait
  // container.build writes into the image store: only a store we can open (not a fixed test set).
  if (auto shared = std::dynamic_pointer_cast<const image::SharedStore>(opts_.image_source)) {
    BuilderSettings settings{opts_.egress, opts_.cgroup_parent, opts_.id_base};
    builder_ = std::make_unique<EnvironmentBuilder>(std::const_pointer_cast<image::SharedStore>(shared), settings,
                                                    [this]() -> const CgroupLayout& { return Layout(); });
  }
}

Result<EnvironmentBuild> NativeBackend::BuildEnvironment(const Policy& policy, const BuildProgress& progress) {
  if (policy.build.empty()) return Error{"policy '" + policy.name + "' has no container.build"};
  if (!builder_)
    return Error{"container.build needs the image store (--store DIR, $LLM_SANDBOX_IMAGE_STORE or the default store); "
                 "this process has none"};
  LSB_ASSIGN_OR_RETURN(ImageMap images, images_.Get());
  LSB_ASSIGN_OR_RETURN(BoxRoot base, ResolveBoxRoot(policy.image, policy.pull,
                                                    RootSources{images, opts_.image_source.get(), opts_.image_puller.get()},
                                                    /*may_pull=*/true));
  if (!base.image)
    return Error{"container.build: container.image '" + policy.image + "' is " + base.rootfs +
                 " here, not an image of the store; a build needs an image (pull or import one, e.g. python:3.12-slim)"};
  BuildReport report(opts_.build_event, progress, policy, "native");
  auto built = builder_->Build(policy, *base.image, report.progress());
  if (!built.ok()) {
    report.Failed(built.error().message);
    return built.error();
  }
  report.Done(built->reference, built->steps, built->steps_built);
  return EnvironmentBuild{built->reference, built->root.manifest_digest, built->steps, built->steps_built,
                          built->log_path, ""};
}

std::optional<BuildRecord> NativeBackend::BuildRecordOf(const Policy& policy) const {
  // The builder's store: a process without one (a fixed image source) has built nothing.
  auto store = std::dynamic_pointer_cast<const image::SharedStore>(opts_.image_source);
  if (policy.build.empty() || !store) return std::nullopt;
  auto record = ReadPolicyBuildRecord(store->root(), policy.name);
  if (!record.ok()) return std::nullopt;
  return std::move(record).value();
}

const CgroupLayout& NativeBackend::Layout() const {
  std::call_once(layout_once_, [this] { layout_ = DetectCgroupLayout(); });
  return layout_;
}

std::vector<ControlSupport> NativeBackend::PlanControls(const Policy& policy) const {
  // What the native backend cannot do anywhere (native_controls.cc), then what this host lacks.
  std::vector<ControlSupport> out = RefusedControls(policy);
  auto add = [&](std::string control, bool enforced, std::string how) {
    out.push_back(ControlSupport{std::move(control), enforced, std::move(how)});
  };
  IdMapPlan idmap = PlanFor(opts_);
  if (policy.uid == 0 || policy.gid == 0) {
    // refused above (native_controls.cc)
  } else if (!idmap.Maps(policy.uid) || !idmap.Maps(policy.gid))
    add("container.user", false,
        "uid " + std::to_string(policy.uid) + " / gid " + std::to_string(policy.gid) +
            " cannot be mapped in the box's user namespace: " + idmap.describe +
            "; run as root (maps ids 0-65535 to host " + std::to_string(opts_.id_base) + "+)");
  else
    add("container.user", true,
        "user namespace, " + idmap.describe + "; the program runs as " + std::to_string(policy.uid) +
            ":" + std::to_string(policy.gid) + " inside");
  add("container.user_namespace", true, "always: every native box has its own user namespace");
  add("resources.kernel_user_limits", true,
      std::string(Privileged() ? "the box's user namespace is owned by its own unprivileged host uid (" +
                                     std::to_string(OwnerBase(opts_)) + "+, not root), so host-level "
                                     "per-user limits are charged to it; "
                                 : "the box's user namespace is owned by this (unprivileged) user; ") +
          "inside it, per uid: " + DescribeBoxUserLimits());

  // Never the host's network namespace (it would expose the host's loopback services): network
  // "on" is the box's own namespace with only the egress proxy's socket in it (docs/network.md).
  if (policy.network_enabled)
    add("network.enabled", true,
        std::string("the box's own network namespace, loopback only, where the one listening socket is the "
                    "egress proxy at ") + protocol::kEgressProxyAddress +
            " (served outside the box; names resolved and checked by the proxy) + init's connect watch and "
            "Landlock (TCP connect to the proxy's port only)");
  else
    add("network.enabled", true,
        std::string("a new, empty network namespace (loopback only, ") + (opts_.loopback_up ? "up" : "down") +
            ") + init's seccomp/connect watch");
  if (!policy.network_secrets.empty())
    add("network.secrets", true,
        "the egress proxy adds " + std::to_string(policy.network_secrets.size()) +
            " header(s) to plain-HTTP requests for their hosts, values from --secrets-file or this process's "
            "environment (never the box's), masked in what those hosts send back; over HTTPS the proxy "
            "terminates TLS with the box's own CA (made at box start, only its certificate in the box's trust "
            "bundle) and verifies the upstream against the host's trust store");
  return out;
}

std::vector<ControlSupport> NativeBackend::Explain(const Policy& policy) const {
  std::vector<ControlSupport> out;
  auto add = [&](std::string control, bool enforced, std::string how) {
    out.push_back(ControlSupport{std::move(control), enforced, std::move(how)});
  };

  auto init = OpenInitBinary(opts_.init_path);
  if (init.ok())
    add("llm-sandbox-init", true, init->path);
  else
    add("llm-sandbox-init", false, init.error().message);

  auto root = ResolveRoot(policy, /*may_pull=*/false);
  if (!root.ok())
    add("container.image", false, root.error().message);
  else
    add("container.image", true, root->how);
  // A workdir the box will not have fails every box at its start (issue 37): refused once, here.
  if (WorkdirFinding wd = CheckWorkdir(policy, root); wd.verdict == WorkdirFinding::Verdict::kMissing) {
    const std::string prefix = "container.workdir: ";
    std::string what = wd.message.rfind(prefix, 0) == 0 ? wd.message.substr(prefix.size()) : wd.message;
    add("container.workdir", false, what + "; fix: " + wd.hint);
  }

  for (auto& c : PlanControls(policy)) out.push_back(std::move(c));

  CgroupLimits limits = LimitsFor(policy, opts_);
  for (const auto& c : ProbeCgroups(Layout(), opts_.cgroup_parent, limits)) {
    // Memory and pids groups are needed even without a limit (OOM verdict, peak, fork bombs).
    bool limited = (c.control == "resources.memory" && limits.memory_bytes > 0) ||
                   (c.control == "resources.cpu" && limits.cpu > 0) ||
                   (c.control == "resources.pids" && limits.pids > 0);
    std::string how = c.how;
    if (c.enforced && c.control == "resources.memory" && !limited) how = "not limited by policy; accounted by " + how;
    add(c.control, c.enforced, how);
  }
  // Not a policy control: how init survives an OOM in its box so it can report it.
  add("init.oom_protection", true,
      CanLowerOomScore()
          ? "init oom_score_adj -1000, the program raises its own to 1000"
          : "the program raises its oom_score_adj to 1000; init's cannot be lowered here (no "
            "CAP_SYS_RESOURCE), so it is only preferred over, not exempt from, the OOM killer");
  return out;
}

Status NativeBackend::Check(const Policy& policy) const { return Refusal(policy, Explain(policy)); }

Enforcement NativeBackend::DescribeControl(const ControlRow& row, const Policy& policy) const {
  return native::DescribeControl(row, policy);
}

Status NativeBackend::Refusal(const Policy& policy, const std::vector<ControlSupport>& controls) {
  std::string problems;
  for (const auto& c : controls)
    if (!c.enforced) problems += "\n  " + c.control + ": " + c.how;
  if (problems.empty()) return OkStatus();
  return Error{"the native backend cannot enforce policy '" + policy.name + "' here:" + problems};
}

Result<BoxRoot> NativeBackend::ResolveRoot(const Policy& policy, bool may_pull) const {
  LSB_ASSIGN_OR_RETURN(ImageMap images, images_.Get());
  LSB_ASSIGN_OR_RETURN(BoxRoot root,
                       ResolveBoxRoot(policy.image, policy.pull,
                                      RootSources{images, opts_.image_source.get(), opts_.image_puller.get()}, may_pull));
  if (policy.build.empty()) return root;
  if (!builder_)
    return Error{"container.build needs the image store (--store DIR, $LLM_SANDBOX_IMAGE_STORE or the default store); "
                 "this process has none"};
  if (root.rootfs != "image")
    return Error{"container.build: container.image '" + policy.image + "' resolves to " + root.rootfs +
                 ", not an image of the store; a build needs an image (pull or import one, e.g. python:3.12-slim)"};
  if (!may_pull || !root.image) {
    root.how += "; container.build: built on first use into " + std::string(kBuildRepository) + ":<key>";
    return root;
  }
  // Built on first use, then found in the store (or the builder's memo) by every later box.
  BuildReport report(opts_.build_event, opts_.build_progress, policy, "native");
  auto built = builder_->Build(policy, *root.image, report.progress());
  if (!built.ok()) {
    report.Failed(built.error().message);
    return built.error();
  }
  report.Done(built->reference, built->steps, built->steps_built);
  root.image = built->root;
  root.how += "; built by container.build as " + built->reference;
  return root;
}

Result<protocol::BoxSetup> NativeBackend::SetupFor(const Policy& policy) const {
  LSB_ASSIGN_OR_RETURN(BoxRoot root, ResolveRoot(policy, /*may_pull=*/true));
  protocol::BoxSetup s = PolicyBoxSetup(policy);
  s.mode = protocol::BoxMode::kBuildRoot;  // init assembles the root itself
  LSB_ASSIGN_OR_RETURN(s.mounts, ResolveHostMounts(s.mounts, opts_.mount_roots));
  s.rootfs = root.rootfs;
  if (policy.network_enabled) s.egress_proxy = protocol::kEgressProxyAddress;
  if (root.image) {
    // The image's config fills the policy's gaps (init: image_config.h, command_path.h).
    const image::ImageRoot& img = *root.image;
    if (img.layers.empty() || img.layers.size() > protocol::kMaxImageLayers)
      return Error{"container.image '" + policy.image + "' (" + img.reference + ") has " + std::to_string(img.layers.size()) +
                   " layers; a native box takes 1 to " + std::to_string(protocol::kMaxImageLayers)};
    s.layers = img.layers;
    s.image_env = img.config.env;
    if (!policy.positions.count("container.workdir")) s.image_workdir = img.config.working_dir;
  }
  if (opts_.font_cache && s.rootfs == "host" && AllowsPython(s.allow)) {
    const FontCache& fonts = fonts_.Get();  // the host's fonts: an image root has its own
    s.font_cache_name = fonts.name;
    s.font_cache = fonts.json;
  }
  return s;
}

size_t NativeBackend::RemoveStaleGroups() const {
  return RemoveStaleBoxGroups(Layout(), opts_.cgroup_parent, std::chrono::seconds(60));
}

std::string NativeBackend::RefusalFix(const Policy& policy) const {
  if (policy.runtime == ContainerRuntime::kRunsc)
    return "run the daemon with --backend docker on an engine where gVisor's runtime runsc is registered "
           "(scripts/ensure-docker.sh adds it)";
  return Backend::RefusalFix(policy);
}

LaunchPlan NativeBackend::PlanLaunch(const Policy& policy) const {
  LaunchPlan plan;
  plan.limits = LimitsFor(policy, opts_);
  plan.new_net = true;
  if (policy.network_enabled)
    plan.egress = EgressPlan{true, policy.network_allow, policy.network_deny, policy.network_secrets};
  if (auto st = Refusal(policy, PlanControls(policy)); !st.ok()) plan.refused = st.error().message;
  return plan;
}

Result<std::string> NativeBackend::BoxShape(const Policy& policy, const protocol::BoxSetup& setup) const {
  return nlohmann::json{{"setup", setup}, {"launch", PlanLaunch(policy)}}.dump();
}

Result<std::unique_ptr<Box>> NativeBackend::Start(const Policy& policy, const protocol::BoxSetup& setup,
                                                  const BoxOwner& owner) {
  // Fail closed: never start a box that would silently lack a control. The steps below fail on
  // what they cannot do (the init binary, a cgroup controller, a limit); what none of them would
  // notice (runtime, user mapping, network) is checked first (the plan's refusal). A failure is
  // then explained by the whole Check, which names every control this host cannot enforce, not
  // only the first one hit. (Running Check before every start cost a third of a millisecond: it
  // probes what Launch does.)
  auto explained = [&](Error e) -> Error {
    if (auto all = Check(policy); !all.ok()) return all.error();
    return e;
  };
  LaunchPlan plan = PlanLaunch(policy);
  if (!plan.refused.empty()) return explained(Error{plan.refused});
  // Trace mode records the program's own execve, which an adopted copy never makes.
  // A box for no one in particular (a pool's, filled ahead) is launched: a zygote is one owner's.
  if (opts_.fork_server && owner && setup.fork.empty() && setup.mode == protocol::BoxMode::kBuildRoot && setup.mounts.empty() &&
      !setup.trace && !plan.egress.enabled && plan.new_net) {
    auto forked = ForkLaunch(policy, plan, setup, *owner);
    if (forked.ok() && *forked) return forked;
    // Not a control that is off: a box of its own has the same confinement, only a slower start.
    if (!forked.ok())
      std::fprintf(stderr, "llm-sandbox: fork server: %s; starting the box on its own\n", forked.error().message.c_str());
  }
  auto box = Launch(plan, setup);
  if (!box.ok()) return explained(box.error());
  return box;
}

size_t NativeBackend::ForkServers() const {
  std::lock_guard<std::mutex> lock(fork_mu_);
  size_t alive = 0;
  for (const auto& [key, entry] : fork_servers_) alive += entry.server && entry.server->alive();
  return alive;
}

bool NativeBackend::MakeRoomLocked(std::shared_ptr<ForkServer>& evicted) {
  // Dead servers go first (their boxes ended with them), then the idle one used least recently.
  for (auto it = fork_servers_.begin(); it != fork_servers_.end();)
    it = !it->second.server || it->second.server->alive() ? std::next(it) : fork_servers_.erase(it);
  if (fork_servers_.size() < kMaxForkServers) return true;
  auto lru = fork_servers_.end();
  for (auto it = fork_servers_.begin(); it != fork_servers_.end(); ++it) {
    // Only the map holds it: no box (each holds its server), and none can take it but under fork_mu_.
    if (!it->second.server || it->second.server.use_count() != 1) continue;
    // A server used lately stays: owners taking turns would otherwise start a zygote per request.
    if (std::chrono::steady_clock::now() - it->second.used < kForkServerIdleEviction) continue;
    if (lru == fork_servers_.end() || it->second.used < lru->second.used) lru = it;
  }
  if (lru == fork_servers_.end()) return false;
  evicted = std::move(lru->second.server);
  fork_servers_.erase(lru);
  return true;
}

Result<std::unique_ptr<ForkServer>> NativeBackend::StartServer(const LaunchPlan& plan, const protocol::BoxSetup& setup,
                                                               const protocol::RunSpec& run) {
  LSB_ASSIGN_OR_RETURN(InitBinary init, OpenInitBinary(opts_.init_path));
  // The zygote forks every box of the setup: its CPU is the daemon's work, not a run's, so
  // it is not held to a run's CPU quota (its memory and pids limits stay the policy's).
  LaunchPlan zygote_plan = plan;
  zygote_plan.limits.cpu = 0;
  auto launch = [this, &zygote_plan](const protocol::BoxSetup& z, const protocol::RunSpec& zr,
                                     const std::vector<int>& keep) -> Result<std::unique_ptr<NativeBox>> {
    ZygoteLaunch how{&zr, keep};
    LSB_ASSIGN_OR_RETURN(std::unique_ptr<Box> box, Launch(zygote_plan, z, &how));
    return std::unique_ptr<NativeBox>(static_cast<NativeBox*>(box.release()));
  };
  return ForkServer::Start(setup, run, init.path, init.fd.get(), opts_.fork_server_sources, launch);
}

Result<std::shared_ptr<ForkServer>> NativeBackend::ServerFor(const LaunchPlan& plan, const protocol::BoxSetup& setup,
                                                             const protocol::RunSpec& run, const std::string& owner,
                                                             std::shared_ptr<ForkServer>& evicted) {
  // By init's setup (a box's cgroup limits are its own groups', whatever the zygote's are, so
  // requests that lower them share the server) and by owner: a zygote is never another owner's.
  const std::string shape = nlohmann::json(setup).dump();
  const std::string key = shape + "\n" + owner;
  uint64_t gen = 0;
  {
    std::lock_guard<std::mutex> l(fork_mu_);
    auto failed = fork_failed_.find(shape);
    if (failed != fork_failed_.end() && std::chrono::steady_clock::now() - failed->second < std::chrono::minutes(1))
      return std::shared_ptr<ForkServer>();
    auto found = fork_servers_.find(key);
    if (found != fork_servers_.end() && !found->second.server) return std::shared_ptr<ForkServer>();  // starting
    if (found != fork_servers_.end() && found->second.server->alive()) {
      found->second.used = std::chrono::steady_clock::now();
      return found->second.server;
    }
    if (found != fork_servers_.end()) fork_servers_.erase(found);  // its zygote ended
    if (!MakeRoomLocked(evicted)) return std::shared_ptr<ForkServer>();
    fork_servers_[key] = ForkServerEntry{nullptr, std::chrono::steady_clock::now()};  // starting: counts
    gen = fork_gen_;
    if (!LiftHostRlimits() && !fork_rlimits_said_) {
      fork_rlimits_said_ = true;
      std::fprintf(stderr, "llm-sandbox: fork server: no CAP_SYS_RESOURCE to lift the daemon's rlimits: queued "
                           "signals, message queue bytes and locked memory are shared among the boxes of one fork "
                           "server, one token's, up to the daemon's hard limits (docs/security.md)\n");
    }
  }
  auto started = StartServer(plan, setup, run);
  std::lock_guard<std::mutex> l(fork_mu_);
  auto entry = fork_servers_.find(key);
  const bool ours = gen == fork_gen_ && entry != fork_servers_.end() && !entry->second.server;
  if (!started.ok()) {
    if (ours) fork_servers_.erase(entry);  // never an empty entry after a failed start
    fork_failed_[shape] = std::chrono::steady_clock::now();
    return started.error();
  }
  std::shared_ptr<ForkServer> server = std::move(*started);
  if (ours) entry->second = ForkServerEntry{server, std::chrono::steady_clock::now()};
  return server;  // not kept when the policies were reloaded meanwhile: it goes with its boxes
}

Result<std::unique_ptr<Box>> NativeBackend::ForkLaunch(const Policy& policy, const LaunchPlan& plan,
                                                       const protocol::BoxSetup& setup, const std::string& owner) {
  ExecRequest probe;  // a run in the policy's default language, as a one-shot request makes it
  probe.code = "pass";
  LSB_ASSIGN_OR_RETURN(protocol::RunSpec run, BuildRunSpec(policy, probe));
  const std::string& interpreter = run.argv.front();
  if (interpreter.substr(interpreter.rfind('/') + 1).rfind("python", 0) != 0) return std::unique_ptr<Box>();
  std::shared_ptr<ForkServer> evicted;  // a zygote pushed out: killed here, outside the lock
  auto found = ServerFor(plan, setup, run, owner, evicted);
  evicted.reset();
  LSB_ASSIGN_OR_RETURN(std::shared_ptr<ForkServer> server, std::move(found));
  if (!server) return std::unique_ptr<Box>();
  auto lease = image::ImageLease::Take(setup.layers);
  if (!lease.ok()) return lease.error();
  std::string id = NewBoxId();
  LSB_ASSIGN_OR_RETURN(std::unique_ptr<BoxCgroups> cgroups, BoxCgroups::Create(Layout(), opts_.cgroup_parent, id, plan.limits));
  LSB_ASSIGN_OR_RETURN(std::vector<UniqueFd> join, cgroups->JoinFiles());
  protocol::BoxSetup derived = setup;
  derived.fork = "derived";
  const std::string first = protocol::EncodeFrame(protocol::FrameType::kSetup, nlohmann::json(derived).dump());
  LSB_ASSIGN_OR_RETURN(LaunchedInit launched, server->Fork(first, join, DefaultBoxUserLimits(), opts_.loopback_up));
  LSB_TRY(ProtectInitFromOom(launched.process->pid()));
  auto box = std::make_unique<NativeBox>(id, std::move(cgroups), std::move(launched), nullptr);
  box->HoldImage(std::move(lease).value());
  box->KeepAlive(server);  // the zygote's death would end the box
  return std::unique_ptr<Box>(std::move(box));
}

void NativeBackend::PoliciesReloaded() {
  std::map<std::string, ForkServerEntry> old;  // each goes once the boxes it made are gone
  {
    std::lock_guard<std::mutex> l(fork_mu_);
    ++fork_gen_;
    old.swap(fork_servers_);
    fork_failed_.clear();
  }
}

Result<std::unique_ptr<Box>> NativeBackend::Launch(const LaunchPlan& plan, const protocol::BoxSetup& setup,
                                                   const ZygoteLaunch* zygote) {
  LSB_ASSIGN_OR_RETURN(InitBinary init, OpenInitBinary(opts_.init_path));
  // Before anything starts: a secret that cannot be filled refuses the box (never a request
  // without the header it expects). The box's CA (with secrets): its certificate goes to init.
  std::optional<egress::BoxEgress> egress;
  protocol::BoxSetup box_setup = setup;
  if (plan.egress.enabled) {
    LSB_ASSIGN_OR_RETURN(egress, egress::PrepareBoxEgress(plan.egress.allow, plan.egress.deny, plan.egress.secrets,
                                                          opts_.egress));
    box_setup.egress_ca_pem = egress->ca_pem();
  }
  // Before the root is mounted: from here on the store keeps the image's layers (store_lease.h).
  auto lease = image::ImageLease::Take(setup.layers);
  if (!lease.ok()) return lease.error();
  // container.mounts: detached, id-mapped mounts init attaches (runtime/host_mount.h); the fds live until
  // init has its copies.
  std::vector<UniqueFd> mount_fds;
  if (!box_setup.mounts.empty()) {
    if (!Privileged())
      return Error{"container.mounts needs the daemon to run as root (it makes id-mapped mounts of the host directories)"};
    for (auto& m : box_setup.mounts) {
      LSB_ASSIGN_OR_RETURN(UniqueFd fd, OpenHostMount(m.source, opts_.id_base + box_setup.uid, opts_.id_base + box_setup.gid));
      m.fd = fd.get();
      mount_fds.push_back(std::move(fd));
    }
  }
  std::string id = NewBoxId();
  LaunchOptions lo;
  for (const auto& fd : mount_fds) lo.keep_fds.push_back(fd.get());
  lo.init_fd = init.fd.get();
  lo.new_net = plan.new_net;
  lo.loopback_up = opts_.loopback_up;
  lo.egress_listener = plan.egress.enabled;
  lo.idmap = PlanFor(opts_);
  // Host-level per-user charges of this box go to an owner uid of its own, not to root's.
  if (Privileged()) lo.ns_owner = PickBoxOwner(OwnerBase(opts_), opts_.owner_id_count);
  lo.user_limits = DefaultBoxUserLimits();
  lo.first_frames = protocol::EncodeFrame(protocol::FrameType::kSetup, nlohmann::json(box_setup).dump());
  if (zygote) {
    // The zygote: its interpreter's run goes in at once, and what its boxes make is charged to it.
    for (int fd : zygote->keep_fds) lo.keep_fds.push_back(fd);
    lo.user_limits = ZygoteUserLimits(kForkServerBoxes);
    lo.first_frames += protocol::EncodeFrame(protocol::FrameType::kRun, nlohmann::json(*zygote->run).dump());
    lo.first_frames += protocol::EncodeFrame(protocol::FrameType::kCode, "");
  }
  // While init's process makes its namespaces: the box's groups, joined by init's process itself
  // for v1 (launcher.h), by pid for v2.
  std::unique_ptr<BoxCgroups> cgroups;
  lo.prepare = [&](pid_t pid) -> Result<std::vector<UniqueFd>> {
    auto cg = BoxCgroups::Create(Layout(), opts_.cgroup_parent, id, plan.limits);
    if (!cg.ok()) return cg.error();
    cgroups = std::move(*cg);
    LSB_TRY(cgroups->AddProcess(pid, /*skip_v1=*/true));
    LSB_TRY(ProtectInitFromOom(pid));
    return cgroups->SelfAttachFiles();
  };
  auto launched = LaunchInit(lo);
  if (!launched.ok()) return launched.error().Wrap("start native box (init " + init.path + ")");
  std::unique_ptr<egress::EgressProxy> proxy;
  if (egress) {
    LSB_ASSIGN_OR_RETURN(proxy, egress::ServeBoxEgress(std::move(launched->egress_listener), std::move(*egress),
                                                       opts_.egress));
  }
  auto box = std::make_unique<NativeBox>(id, std::move(cgroups), std::move(*launched), std::move(proxy));
  box->HoldImage(std::move(lease).value());
  // A CLI's teardown helper, off the run's path, also clears what killed runs left behind.
  box->set_after_teardown([this] { (void)RemoveStaleGroups(); });
  return std::unique_ptr<Box>(std::move(box));
}

}  // namespace lsb::native
