#include "runtime/docker/docker_backend.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include <unistd.h>

#include "protocol/frame.h"
#include "runtime/mount_roots.h"
#include "runtime/docker/build_labels.h"
#include "runtime/docker/container_spec.h"
#include "runtime/docker/docker_controls.h"
#include "runtime/docker/docker_box.h"
#include "runtime/docker/egress_attach.h"
#include "runtime/docker/host_mount_views.h"
#include "runtime/docker/init_path.h"
#include "runtime/docker/ownership.h"
#include "runtime/docker/seccomp_profile.h"

namespace lsb::docker {
namespace {

// Docker takes the profile inline in SecurityOpt; Podman's compat API reads the value as a path on
// its own host, so a local Podman gets a file (content-addressed, written once); a remote Podman
// keeps its default profile (the watched escape calls it refuses are then not alerted). The
// profile: every system call libseccomp knows here except those llm-sandbox-init refuses
// silently; the escape calls init watches pass to its filter, which refuses them (EPERM) with an
// escape_syscall alert.
Status ChooseSeccomp(const EngineClient& engine, std::string& opt) {
  LSB_ASSIGN_OR_RETURN(std::string profile, EngineSeccompProfile());
  if (!engine.is_podman()) {
    opt = "seccomp=" + profile;
    return OkStatus();
  }
  if (engine.endpoint().kind != Endpoint::Kind::kUnix) return OkStatus();
  LSB_ASSIGN_OR_RETURN(std::string path, WriteProfileFile(profile));
  opt = "seccomp=" + path;
  return OkStatus();
}

// A pooled box's shape: its container spec and init's setup.
std::string ShapeOf(const nlohmann::json& pooled_spec, const protocol::BoxSetup& setup) {
  return pooled_spec.dump() + "\n" + nlohmann::json(setup).dump();
}

}  // namespace

Result<std::unique_ptr<DockerBackend>> DockerBackend::Create(const DockerBackendOptions& opts) {
  std::unique_ptr<DockerBackend> b(new DockerBackend(opts));
  Endpoint ep;
  if (opts.endpoint.empty()) {
    LSB_ASSIGN_OR_RETURN(ep, DefaultEndpoint());
  } else {
    LSB_ASSIGN_OR_RETURN(ep, ParseEndpoint(opts.endpoint));
  }
  LSB_ASSIGN_OR_RETURN(auto client, EngineClient::Open(ep, opts.client));
  b->engine_ = std::make_shared<const EngineClient>(std::move(client));
  b->reaper_ = std::make_shared<ContainerReaper>(b->engine_);
  LSB_ASSIGN_OR_RETURN(Json info, b->engine_->Info());
  if (info.contains("Runtimes") && info["Runtimes"].is_object())
    for (auto it = info["Runtimes"].begin(); it != info["Runtimes"].end(); ++it) b->runtimes_.push_back(it.key());
  if (info.contains("SecurityOptions") && info["SecurityOptions"].is_array()) {
    for (const auto& o : info["SecurityOptions"]) {
      std::string s = o.is_string() ? o.get<std::string>() : "";
      if (s.rfind("name=seccomp", 0) == 0) b->engine_seccomp_ = true;
      if (s.rfind("name=userns", 0) == 0 || s.rfind("name=rootless", 0) == 0) b->engine_remaps_ids_ = true;
    }
  }
  if (auto st = ChooseSeccomp(*b->engine_, b->seccomp_opt_); !st.ok())
    return st.error().Wrap("docker: seccomp profile");
  LSB_ASSIGN_OR_RETURN(b->images_, ImageResolver::Load(opts.images_file));
  LSB_ASSIGN_OR_RETURN(b->init_path_, FindStaticInit(opts.init_path));
  LSB_ASSIGN_OR_RETURN(b->init_source_, ResolveInitSource(*b->engine_, b->init_path_, opts.init_volume));
  b->owner_ = OwnerLabel();
  b->builder_ = std::make_unique<DockerEnvBuilder>(b->engine_, opts.egress, b->owner_);
  if (opts.reap_orphans) {
    auto reaped = ReapOrphans(*b->engine_);
    if (!reaped.ok()) return reaped.error().Wrap("removing orphaned sandbox containers");
    if (::geteuid() == 0) RemoveStaleMountViews();  // after the containers that bound them
  }
  return b;
}

DockerBackend::~DockerBackend() {
  std::lock_guard<std::mutex> lock(pools_mu_);
  pools_.clear();  // each pool removes its waiting containers
  reaper_.reset();  // the last owner's destructor removes what is still queued
  RemoveOwnMountDir(owner_);  // empty once every box is gone (boxes hold the reaper, not us)
}

std::string DockerBackend::NotRootBesideTheEngine() const {
  if (::geteuid() != 0) return "not root";
  if (engine_->endpoint().kind != Endpoint::Kind::kUnix) return "talking to a remote engine";
  return "";
}

Status DockerBackend::Check(const Policy& policy) const {
  // What the Docker backend cannot do anywhere (docker_controls.cc), then what this engine lacks.
  std::vector<std::string> problems;
  for (const ControlSupport& c : RefusedControls(policy)) problems.push_back(c.control + ": " + c.how);
  if (std::find(runtimes_.begin(), runtimes_.end(), Spelling(policy.runtime)) == runtimes_.end())
    problems.push_back("container.runtime '" + Spelling(policy.runtime) + "' is not registered with the engine at " +
                       engine_->endpoint().ToString() +
                       (policy.runtime == ContainerRuntime::kRunsc
                            ? " (install Debian's runsc and run scripts/ensure-docker.sh, which "
                              "adds it to /etc/docker/daemon.json, then restart dockerd)"
                            : ""));
  if (!engine_seccomp_ && policy.runtime != ContainerRuntime::kRunsc)
    problems.push_back("container.seccomp: the engine at " + engine_->endpoint().ToString() +
                       " reports no seccomp support (SecurityOptions lacks name=seccomp)");
  // A build step's only network is its egress proxy, which this process makes inside the build
  // container's namespace: root on the engine's host, or no build (never the bridge).
  const std::string not_beside = NotRootBesideTheEngine();
  if ((!policy.build.apt.empty() || !policy.build.pip.empty() || !policy.build.run.empty()) && !not_beside.empty())
    problems.push_back("container.build: the build's steps reach the network only through the egress proxy, which "
                       "llm-sandbox attaches to the build container from the engine's host as root; this process is " +
                       not_beside + " (run it as root beside the engine, or use the native backend)");
  // container.mounts: this process makes each box's view of a host directory (host_mount_views.h)
  // and the engine binds it, so both must share this host, and the ids must be the host's.
  if (!policy.mounts.empty()) {
    const std::string fix = " (docs/policy.md \"container.mounts\"), or run the policy on the native backend";
    if (!not_beside.empty())
      problems.push_back("container.mounts: llm-sandbox makes the host directory's id-mapped view the engine binds, "
                         "which needs this process to run as root beside the engine; this process is " + not_beside +
                         fix);
    else if (!init_source_.volume.empty() || init_source_.host_path != init_path_)
      problems.push_back("container.mounts: this process does not share the engine host's files (boxes get init "
                         "from the " +
                         init_source_.ToString() +
                         ", e.g. the daemon runs in a container), so the engine could not bind the views it makes" +
                         fix);
    else if (engine_->is_podman())
      problems.push_back("container.mounts: not supported with Podman (its binds of the views are not verified)" + fix);
    else if (engine_remaps_ids_)
      problems.push_back("container.mounts: the engine at " + engine_->endpoint().ToString() +
                         " remaps user ids (userns-remap or rootless), so the view's id map would not match the "
                         "box's user" + fix);
  }
  // Fail closed: the bridge would give a box every name, which only allow: ["*"] asks for; any
  // other network is the egress proxy's socket made in the container's namespace (egress_attach.h).
  if (policy.network_enabled && !policy.NetworkUnfiltered() && policy.runtime != ContainerRuntime::kRunsc) {
    if (engine_->endpoint().kind != Endpoint::Kind::kUnix)
      problems.push_back("network: network.allow/deny/secrets need the engine on this host (the daemon makes the egress "
                         "proxy's socket in the container's network namespace); " + engine_->endpoint().ToString() +
                         " is remote: run the daemon on the engine's host, or use the native backend");
    else if (::geteuid() != 0)
      problems.push_back("network: network.allow/deny/secrets on Docker need this process to run as root (it joins the "
                         "container's network namespace to make the egress proxy's socket); run the daemon as root, "
                         "or use the native backend");
  }
  if (problems.empty()) return OkStatus();
  std::string msg = "policy '" + policy.name + "' cannot be enforced on the Docker backend:";
  for (const auto& p : problems) msg += "\n  - " + p;
  return Error{msg};
}

Enforcement DockerBackend::DescribeControl(const ControlRow& row, const Policy& policy) const {
  return docker::DescribeControl(row, policy);
}

Status DockerBackend::EnsureBaseImage(const Policy& policy) const {
  std::string mapped = images_.Map(policy.image);
  {
    std::lock_guard<std::mutex> lock(images_mu_);
    if (images_seen_.count(mapped)) return OkStatus();
  }
  auto image = images_.Ensure(*engine_, policy.image, [](const std::string& line) {
    std::fprintf(stderr, "llm-sandbox: %s\n", line.c_str());
  });
  if (!image.ok()) return image.error().Wrap("docker");
  std::lock_guard<std::mutex> lock(images_mu_);
  images_seen_.insert(mapped);
  return OkStatus();
}

Result<EnvironmentBuild> DockerBackend::BuildEnvironment(const Policy& policy, const BuildProgress& progress) {
  if (policy.build.empty()) return Error{"policy '" + policy.name + "' has no container.build"};
  LSB_TRY(Check(policy));
  LSB_TRY(EnsureBaseImage(policy));
  BuildReport report(opts_.build_event, progress, policy, "docker");
  auto built = builder_->Build(policy, images_.Map(policy.image), report.progress());
  if (!built.ok()) {
    report.Failed(built.error().message);
    return built.error();
  }
  report.Done(built->image, built->steps, built->steps_built);
  // The engine holds the image (no store digest) and the step lines went to `progress` only.
  return EnvironmentBuild{built->image, "", built->steps, built->steps_built, "", "in the Docker engine"};
}

Result<std::string> DockerBackend::ImageFor(const Policy& policy) const {
  std::string mapped = images_.Map(policy.image);
  if (policy.build.empty()) return mapped;
  // Built on first use; then the builder's memo (no files steps) or a look at each step's tag.
  std::string known = builder_->Built(policy, mapped);
  if (!known.empty()) return known;
  auto progress = opts_.build_progress ? opts_.build_progress : [](const std::string& line) {
    std::fprintf(stderr, "llm-sandbox: build %s\n", line.c_str());
  };
  BuildReport report(opts_.build_event, progress, policy, "docker");
  auto built = builder_->Build(policy, mapped, report.progress());
  if (!built.ok()) {
    report.Failed(built.error().message);
    return built.error();
  }
  report.Done(built->image, built->steps, built->steps_built);
  return built->image;
}

std::optional<BuildRecord> DockerBackend::BuildRecordOf(const Policy& policy) const {
  if (policy.build.empty()) return std::nullopt;
  const std::string image = builder_->Built(policy, images_.Map(policy.image));
  if (image.empty()) return std::nullopt;
  auto inspected = engine_->InspectImage(image);
  if (!inspected.ok()) return std::nullopt;
  const nlohmann::json config = inspected->value("Config", nlohmann::json::object());
  BuildRecord record;
  record.reference = image;
  record.policy = ImageLabel(config, kLabelPolicy);
  record.base = ImageLabel(config, kLabelBuildBase);
  record.python = ImageLabel(config, kLabelBuildPython);
  record.packages = LabelPairs(ImageLabel(config, kLabelBuildPackages));
  record.apt = LabelPairs(ImageLabel(config, kLabelBuildApt));
  return record;
}

Result<nlohmann::json> DockerBackend::SpecFor(const Policy& policy, bool pooled) const {
  SpecInputs in;
  LSB_ASSIGN_OR_RETURN(in.image, ImageFor(policy));
  in.init_host_path = init_source_.host_path;
  in.init_volume = init_source_.volume;
  in.init_volume_file = init_source_.file;
  in.owner = owner_;
  in.pooled = pooled;
  if (policy.runtime != ContainerRuntime::kRunsc) in.seccomp_opt = seccomp_opt_;
  in.podman = engine_->is_podman();
  return BuildContainerSpec(policy, in);
}

Result<std::string> DockerBackend::BoxShape(const Policy& policy, const protocol::BoxSetup& setup) const {
  LSB_ASSIGN_OR_RETURN(auto spec, SpecFor(policy, true));
  return ShapeOf(spec, setup);
}

ContainerPool* DockerBackend::PoolFor(const Policy& policy) {
  // With network.secrets each box gets a CA of its own in init's setup: made at start, not ahead.
  // Nor with container.mounts: each box binds views of its own (host_mount_views.h).
  if (opts_.pool_size == 0 || !policy.network_secrets.empty() || !policy.mounts.empty()) return nullptr;
  auto spec = SpecFor(policy, true);
  if (!spec.ok()) return nullptr;
  auto setup = SetupFor(policy);
  if (!setup.ok()) return nullptr;
  // Pooled boxes are set up ahead: one pool per box shape, the spec AND init's setup.
  std::string key = ShapeOf(*spec, *setup);
  std::lock_guard<std::mutex> lock(pools_mu_);
  auto it = pools_.find(key);
  if (it == pools_.end() && pools_.size() >= opts_.max_pools) return nullptr;  // bounded: start on demand
  auto& pooled = pools_[key];
  pooled.policies.insert(policy.name);
  auto& pool = pooled.pool;
  if (!pool) {
    auto engine = engine_;
    auto reaper = reaper_;
    auto factory = [engine, reaper, s = *spec, b = *setup]() -> Result<std::unique_ptr<DockerBox>> {
      LSB_ASSIGN_OR_RETURN(auto box, DockerBox::Launch(engine, s, reaper));
      LSB_TRY(HandshakeAhead(*box, b, std::chrono::milliseconds(15000)));
      return box;
    };
    // pool_refillers (2) at a time: on 2 cores, one refiller per pooled box (4) lowered the
    // throughput of 4 parallel clients (BENCHMARKS.md, "Figures behind decisions in the code"):
    // the extra creates compete with the executions for the same CPUs.
    pool = std::make_unique<ContainerPool>(std::move(factory), opts_.pool_size, opts_.pool_refillers);
  }
  return pool.get();
}

std::optional<PoolStats> DockerBackend::OwnPoolStats() const {
  if (opts_.pool_size == 0) return std::nullopt;
  PoolStats st;
  st.per_policy = opts_.pool_size;
  st.reaping = reaper_ ? reaper_->pending() : 0;
  std::lock_guard<std::mutex> lock(pools_mu_);
  for (const auto& [shape, pooled] : pools_) {
    auto n = pooled.pool->counts();
    st.ready += n.ready;
    st.hits += n.hits;
    st.misses += n.misses;
    for (const auto& name : pooled.policies) st.ready_by_policy[name] += n.ready;
  }
  return st;
}

std::string DockerBackend::RefusalFix(const Policy& policy) const {
  if (policy.runtime == ContainerRuntime::kRunsc)
    return "register gVisor's runsc with the engine (scripts/ensure-docker.sh adds it to /etc/docker/daemon.json), "
           "then restart dockerd and this daemon";
  return Backend::RefusalFix(policy);
}

Status DockerBackend::EnsureIsolatedNetwork() {
  std::lock_guard<std::mutex> lock(network_mu_);
  if (network_ready_) return OkStatus();
  const Json create = {{"Driver", "bridge"},
                       {"Options", {{"com.docker.network.bridge.enable_icc", "false"}}},
                       {"Labels", {{kLabelNetwork, "isolated"}}}};
  auto net = engine_->EnsureNetwork(kIsolatedNetwork, create);
  if (!net.ok()) return net.error().Wrap("docker: the network for boxes with network.enabled");
  // Fail closed: a network of that name that lets boxes talk to each other (made by hand, or an
  // engine that ignores the option) is refused, not used.
  std::string icc;
  if (net->contains("Options") && (*net)["Options"].is_object())
    icc = (*net)["Options"].value("com.docker.network.bridge.enable_icc", "");
  if (icc != "false")
    return Error{std::string("docker: network '") + kIsolatedNetwork + "' on " + engine_->endpoint().ToString() +
                 " does not keep boxes apart (com.docker.network.bridge.enable_icc is '" + icc +
                 "', want 'false'); remove it (docker network rm " + kIsolatedNetwork +
                 ") and it is recreated, or turn the policy's network off"};
  network_ready_ = true;
  return OkStatus();
}

Result<std::unique_ptr<Box>> DockerBackend::Start(const Policy& policy, const protocol::BoxSetup& setup,
                                                  const BoxOwner& /*owner*/) {
  LSB_TRY(Check(policy));
  // The image must be in the engine before a create can work (a pull where a registry answers).
  // Once seen, an image is not asked about again (a later removal fails the create, clearly).
  LSB_TRY(EnsureBaseImage(policy));
  if (policy.NetworkUnfiltered()) LSB_TRY(EnsureIsolatedNetwork());
  // Before anything starts: a secret that cannot be filled refuses the box; the box's CA is made.
  const bool filtered = policy.network_enabled && !policy.NetworkUnfiltered();
  std::optional<egress::BoxEgress> egress;
  if (filtered) {
    auto prepared = egress::PrepareBoxEgress(policy.network_allow, policy.network_deny, policy.network_secrets,
                                             opts_.egress);
    if (!prepared.ok()) return prepared.error().Wrap("docker");
    egress = std::move(*prepared);
  }
  if (ContainerPool* pool = PoolFor(policy)) {  // never with secrets: the setup holds no box CA
    LSB_ASSIGN_OR_RETURN(auto box, pool->Take());
    if (egress) {
      auto proxy = AttachEgress(*engine_, box->container_id(), std::move(*egress), opts_.egress);
      if (!proxy.ok()) return proxy.error().Wrap("docker");
      box->set_egress(std::move(*proxy));
    }
    return std::unique_ptr<Box>(std::move(box));
  }
  LSB_ASSIGN_OR_RETURN(auto spec, SpecFor(policy, false));
  std::unique_ptr<HostMountViews> views;
  if (!setup.mounts.empty()) {
    // Checked again here, whoever made the setup: the roots, real paths, no symlinks (mount_roots.h).
    LSB_ASSIGN_OR_RETURN(auto checked, ResolveHostMounts(setup.mounts, opts_.mount_roots));
    auto made = HostMountViews::Make(owner_, checked, setup.uid, setup.gid);
    if (!made.ok()) return made.error().Wrap("docker");
    views = std::move(*made);
    for (auto& m : views->SpecMounts()) spec["HostConfig"]["Mounts"].push_back(m);
    spec["Labels"][kLabelMounts] = views->dir();
  }
  auto box = DockerBox::Launch(engine_, spec, reaper_);
  if (!box.ok()) return box.error().Wrap("docker: start box");
  if (views) (*box)->set_mount_views(std::move(views));
  protocol::BoxSetup box_setup = setup;
  if (egress) {
    box_setup.egress_ca_pem = egress->ca_pem();
    auto proxy = AttachEgress(*engine_, (*box)->container_id(), std::move(*egress), opts_.egress);
    if (!proxy.ok()) return proxy.error().Wrap("docker");
    (*box)->set_egress(std::move(*proxy));
  }
  auto sent = protocol::WriteFrame((*box)->stream_fd(), protocol::FrameType::kSetup, nlohmann::json(box_setup).dump());
  if (!sent.ok()) return sent.error().Wrap("docker: send kSetup to the box's init");
  return std::unique_ptr<Box>(std::move(*box));
}

Status DockerBackend::ImagePresent(const Policy& policy) const {
  std::string mapped = images_.Map(policy.image);
  LSB_ASSIGN_OR_RETURN(bool have, engine_->ImageExists(mapped));
  if (have) return OkStatus();
  return Error{"image '" + mapped + "'" + (mapped != policy.image ? " (container.image '" + policy.image + "')" : "") +
               " is not in the engine; build or load it (scripts/build-test-image.sh), or map container.image to "
               "a local image under 'docker:' in the image map (docs/docker.md)"};
}

Result<protocol::BoxSetup> DockerBackend::SetupFor(const Policy& policy) const {
  // uid/gid are the container's User too: init needs no setuid (it has no capabilities).
  protocol::BoxSetup s = PolicyBoxSetup(policy);
  s.mode = protocol::BoxMode::kInPlace;  // the container already is the view; init checks it and adds Landlock+seccomp
  s.rootfs = "image";
  // container.mounts: refused here already when a source is outside the roots (as on native).
  LSB_ASSIGN_OR_RETURN(s.mounts, ResolveHostMounts(s.mounts, opts_.mount_roots));
  // Only under runsc, and only when the policy said so: init then runs without Landlock and the
  // seccomp watch (gVisor has neither) and names them in kReady instead of refusing.
  s.gvisor_accept_weaker = policy.runtime == ContainerRuntime::kRunsc && policy.gvisor_accept_weaker;
  // A filtered network: init points the proxy variables at the socket egress_attach.h makes and
  // lets TCP connect only to its port (as on native).
  if (policy.network_enabled && !policy.NetworkUnfiltered()) s.egress_proxy = protocol::kEgressProxyAddress;
  return s;
}

}  // namespace lsb::docker
