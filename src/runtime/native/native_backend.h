// The native backend: boxes made directly with Linux namespaces and cgroups, no daemon needed
// (DESIGN §3). Start() = launcher.h (namespaces, id maps, fd hand-over) + box_cgroup.h (limits);
// the inner view (rootfs, tmpfs, /proc, Landlock, seccomp) is built by llm-sandbox-init itself in
// mode "build_root".
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "egress/egress_options.h"
#include "image/image_puller.h"
#include "image/image_source.h"
#include "runtime/backend.h"
#include "runtime/image_map_cache.h"
#include "runtime/native/font_cache.h"
#include "runtime/native/box_cgroup.h"
#include "runtime/native/fork_server.h"
#include "runtime/native/box_root.h"
#include "runtime/native/box_user_limits.h"
#include "runtime/native/cgroup_layout.h"
#include "runtime/build_events.h"
#include "runtime/native/env_builder.h"
#include "runtime/native/idmap.h"

namespace lsb::native {

struct NativeOptions {
  std::string images_file;               // --images; "" = $LLM_SANDBOX_IMAGES, /etc/llm-sandbox/images.yaml
  std::string init_path;                 // "" = init_binary.h's search
  uint32_t id_base = kDefaultIdBase;     // host id of uid 0 inside (root only)
  std::string cgroup_parent = "llm-sandbox";  // groups live at <own cgroup>/<this>/<box-id>
  uint32_t init_pids_reserve = 1;        // pids.max = policy pids + this: init itself (single-threaded)
  // Owners of the boxes' user namespaces (root only; box_user_limits.h): a random host uid in
  // [owner_id_base, owner_id_base + owner_id_count). 0 = right above the boxes' mapped range.
  uint32_t owner_id_base = 0;
  uint32_t owner_id_count = kDefaultOwnerCount;
  // The box's loopback device up (its own 127.0.0.1/::1) or, by default, down: with the network
  // off init refuses every inet connect anyway, and bringing it up costs a start up to tens of
  // milliseconds (docs/security.md, "Network isolation with loopback up"). The egress proxy needs
  // it up. $LLM_SANDBOX_NATIVE_LOOPBACK=up sets it (backend_select.cc).
  bool loopback_up = false;
  // Where container.image is looked up after the image map (box_root.h): the image store, and the
  // registry client that fills it when container.pull says so. Either may be absent (then an image
  // only the store could give is an error naming `llm-sandbox image pull|import`). Thread-safe.
  std::shared_ptr<const image::ImageSource> image_source;
  std::shared_ptr<image::ImagePuller> image_puller;
  // The egress proxy of boxes with the network on (docs/network.md): pins, limits.
  egress::EgressOptions egress;
  // Where container.build's progress lines go (the CLI's stderr, the daemon's log); empty: nowhere.
  std::function<void(const std::string&)> build_progress;
  // container.mounts' sources must be under one of these (serve/run --mount-root; mount_roots.h).
  std::vector<std::string> mount_roots;
  BuildEventSink build_event;  // the daemon's image_build events (build_events.h)
  // Boxes made by a fork server per box shape (fork_server.h): a run of the policy's python
  // becomes a fork of an interpreter started once, not a new one (serve --fork-server). Boxes it
  // cannot make (network on, container.mounts) start as usual.
  bool fork_server = false;
  // Sources a run hands its adopted copy as `-c SOURCE` (the one-shot prelude, the session driver:
  // scheduler/driver), compiled once by each fork server instead of by every run.
  std::vector<std::string> fork_server_sources;
  // matplotlib's font list, built once from the host's fonts and given to each host-rooted python
  // box (font_cache.h), so pyplot neither rebuilds it nor executes fc-list. The daemon's only.
  bool font_cache = false;
};

// A box's network through the egress proxy: the policy's lists, as the proxy applies them.
struct EgressPlan {
  bool enabled = false;
  std::vector<std::string> allow, deny;
  std::vector<NetworkSecret> secrets;  // as written (${VAR} unresolved): resolved at each Launch
};
inline void to_json(nlohmann::json& j, const EgressPlan& p) {
  nlohmann::json secrets = nlohmann::json::array();
  for (const NetworkSecret& s : p.secrets) secrets.push_back({s.host, s.header, s.value});
  j = {{"enabled", p.enabled}, {"allow", p.allow}, {"deny", p.deny}, {"secrets", secrets}};
}
inline void from_json(const nlohmann::json& j, EgressPlan& p) {
  j.at("enabled").get_to(p.enabled);
  j.at("allow").get_to(p.allow);
  j.at("deny").get_to(p.deny);
  p.secrets.clear();
  for (const auto& s : j.value("secrets", nlohmann::json::array()))
    p.secrets.push_back(NetworkSecret{s.at(0).get<std::string>(), s.at(1).get<std::string>(), s.at(2).get<std::string>()});
}

// What Launch builds a box from besides init's setup, derived from the policy by PlanLaunch: the
// only way a policy reaches Launch, so BoxShape, which serializes it whole, sees everything a box
// is made of. A field added here goes into the JSON below with it.
struct LaunchPlan {
  CgroupLimits limits;
  bool new_net = true;  // a new, empty network namespace (false would share the host's)
  EgressPlan egress;    // the network on: only the egress proxy, in that namespace
  std::string refused;  // why Start refuses the policy (Refusal of PlanControls); "" = it starts
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LaunchPlan, limits, new_net, egress, refused)

class NativeBackend : public Backend {
 public:
  explicit NativeBackend(NativeOptions opts = {});
  std::string name() const override { return "native"; }
  Status Check(const Policy& policy) const override;
  Enforcement DescribeControl(const ControlRow& row, const Policy& policy) const override;
  std::vector<ControlSupport> Explain(const Policy& policy) const override;
  // With the fork server, a box for `owner` is forked from that owner's zygote (never another's);
  // one for no owner (nullopt) is launched on its own.
  Result<std::unique_ptr<Box>> Start(const Policy& policy, const protocol::BoxSetup& setup, const BoxOwner& owner) override;
  bool BoxesBelongToOwner() const override { return opts_.fork_server; }
  size_t ForkServers() const override;
  Result<protocol::BoxSetup> SetupFor(const Policy& policy) const override;
  // init's setup and the LaunchPlan: together, all a native box is built from.
  Result<std::string> BoxShape(const Policy& policy, const protocol::BoxSetup& setup) const override;
  LaunchPlan PlanLaunch(const Policy& policy) const;
  // Box groups a killed CLI or daemon left behind (box_cgroup.h: RemoveStaleBoxGroups); the daemon
  // calls it at start, a CLI's teardown helper after its own box. Returns how many were removed.
  size_t RemoveStaleGroups() const;
  size_t RemoveLeftovers() override { return RemoveStaleGroups(); }
  void PoliciesReloaded() override;
  // container.build (env_builder.h): the policy's environment, built now unless stored already.
  // An error when the policy has no build or its image is not from the image store.
  Result<EnvironmentBuild> BuildEnvironment(const Policy& policy, const BuildProgress& progress) override;
  // The image store's record of the policy's last build (<store>/builds/by-policy/<name>.json).
  std::optional<BuildRecord> BuildRecordOf(const Policy& policy) const override;
  // Build steps run by this backend's boxes since it was made (tests, the daemon's log).
  uint64_t build_steps_run() const { return builder_ ? builder_->steps_run() : 0; }
  std::string RefusalFix(const Policy& policy) const override;

 private:
  // The controls no step of Launch would trip over: runtime, user mapping, network.
  std::vector<ControlSupport> PlanControls(const Policy& policy) const;
  // An error naming each control in `controls` that is not enforced; ok when there is none.
  static Status Refusal(const Policy& policy, const std::vector<ControlSupport>& controls);
  // Start's work: namespaces, cgroups, init; from the plan and the setup only (never the policy).
  // `zygote`: a fork server's zygote box (its program and the fds it keeps).
  struct ZygoteLaunch {
    const protocol::RunSpec* run;
    std::vector<int> keep_fds;
  };
  Result<std::unique_ptr<Box>> Launch(const LaunchPlan& plan, const protocol::BoxSetup& setup,
                                      const ZygoteLaunch* zygote = nullptr);
  // A box from the fork server of its shape and `owner` (started on first use); an error when none
  // can make it, nullptr when the fork server is not for this policy (its language is not python)
  // or no server may be started now (kMaxForkServers, each holding boxes).
  Result<std::unique_ptr<Box>> ForkLaunch(const Policy& policy, const LaunchPlan& plan, const protocol::BoxSetup& setup,
                                          const std::string& owner);
  // The live server of (setup, owner), started when there is none; nullptr when none may be (or
  // one is starting: that box is launched on its own). `evicted` takes a server pushed out
  // (destroyed by the caller, outside fork_mu_). A start runs outside fork_mu_: one owner's new
  // zygote never holds up another owner's boxes.
  Result<std::shared_ptr<ForkServer>> ServerFor(const LaunchPlan& plan, const protocol::BoxSetup& setup,
                                                const protocol::RunSpec& run, const std::string& owner,
                                                std::shared_ptr<ForkServer>& evicted);
  // Under fork_mu_: room for one more server, by pushing out the least recently used one that holds
  // no box (into `evicted`); false when every server holds boxes.
  bool MakeRoomLocked(std::shared_ptr<ForkServer>& evicted);
  // Starts the zygote of `setup` (ServerFor's slow part, outside fork_mu_).
  Result<std::unique_ptr<ForkServer>> StartServer(const LaunchPlan& plan, const protocol::BoxSetup& setup,
                                                  const protocol::RunSpec& run);
  // container.image per box_root.h; `may_pull` false for Explain (nothing is fetched).
  Result<BoxRoot> ResolveRoot(const Policy& policy, bool may_pull) const;
  // Mounts and our own cgroup do not change under a running process: detect once.
  const CgroupLayout& Layout() const;

  NativeOptions opts_;
  std::unique_ptr<EnvironmentBuilder> builder_;  // with an image store only
  mutable HostFontCache fonts_;  // with opts_.font_cache only
  ImageMapCache images_;  // read for every box (SetupFor) and every Explain
  mutable std::mutex fork_mu_;
  // By init's setup and owner (DESIGN §12: a zygote's boxes share its per-user counts and its
  // randomness, so no two owners' boxes ever come from one zygote).
  struct ForkServerEntry {
    std::shared_ptr<ForkServer> server;  // null while it starts
    std::chrono::steady_clock::time_point used;  // its last box
  };
  std::map<std::string, ForkServerEntry> fork_servers_;
  uint64_t fork_gen_ = 0;  // bumped by PoliciesReloaded: a server started before is not kept
  // Shapes whose server could not start, and when: not tried again for a minute (each try costs
  // an interpreter's start), and said once.
  std::map<std::string, std::chrono::steady_clock::time_point> fork_failed_;
  bool fork_rlimits_said_ = false;  // the daemon could not lift its rlimits: said once
  mutable std::once_flag layout_once_;
  mutable CgroupLayout layout_;
};

}  // namespace lsb::native
