// The Docker backend (DESIGN §2, §3): each box is a container whose PID 1 is the static
// llm-sandbox-init, bind-mounted read-only; its stream is the attach connection. Outer limits are
// the container's (read-only rootfs, tmpfs, no network, no capabilities, no-new-privileges,
// unprivileged uid, memory/cpu/pids, seccomp, runc|runsc); init adds Landlock and its seccomp
// filters inside (BoxSetup.mode "in_place"). See docs/docker.md.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "egress/egress_options.h"
#include "runtime/backend.h"
#include "runtime/build_events.h"
#include "runtime/docker/container_pool.h"
#include "runtime/docker/container_reaper.h"
#include "runtime/docker/docker_builder.h"
#include "runtime/docker/engine_client.h"
#include "runtime/docker/image_resolver.h"
#include "runtime/docker/init_source.h"

namespace lsb::docker {

struct DockerBackendOptions {
  std::string endpoint;      // "" = $DOCKER_HOST or unix:///var/run/docker.sock
  std::string images_file;   // image map with a `docker:` section ("" = $LLM_SANDBOX_IMAGES, /etc)
  std::string init_path;     // "" = search (init_path.h)
  std::string init_volume;   // a named volume holding init ("" = init_source.h decides)
  size_t pool_size = 0;      // warm containers kept per policy; 0 = start each box on demand
  size_t pool_refillers = 2;
  size_t max_pools = 8;      // distinct warm pools (one per container spec); beyond: boxes on demand
  bool reap_orphans = true;  // remove containers (and mount views) of dead owners when the backend is created
  // container.mounts' sources must be under one of these (serve/run --mount-root; mount_roots.h).
  std::vector<std::string> mount_roots;
  ClientOptions client;
  // Every box's and every build step's egress proxy: pins, limits (network.allow/deny/secrets;
  // egress_attach.h); and container.build's progress lines.
  egress::EgressOptions egress;
  std::function<void(const std::string&)> build_progress;
  BuildEventSink build_event;  // the daemon's image_build events (build_events.h)
};

class DockerBackend : public Backend {
 public:
  // Connects (bounded), negotiates the API version, reads the engine's features, reaps orphans.
  static Result<std::unique_ptr<DockerBackend>> Create(const DockerBackendOptions& opts = {});
  ~DockerBackend() override;

  std::string name() const override { return "docker"; }
  Status Check(const Policy& policy) const override;
  Enforcement DescribeControl(const ControlRow& row, const Policy& policy) const override;
  // The owner is ignored: a container shares nothing with another (the engine starts each anew).
  Result<std::unique_ptr<Box>> Start(const Policy& policy, const protocol::BoxSetup& setup, const BoxOwner& owner) override;
  Result<protocol::BoxSetup> SetupFor(const Policy& policy) const override;
  // The container spec of a pooled box and init's setup (two policies may share a spec but not
  // their allow lists): all a Docker box is built with, the key of its warm pool.
  Result<std::string> BoxShape(const Policy& policy, const protocol::BoxSetup& setup) const override;
  // Its container pools' figures when it keeps them (pool_size > 0), per policy that used them.
  std::optional<PoolStats> OwnPoolStats() const override;
  std::string RefusalFix(const Policy& policy) const override;
  // The labels of the image this process built for the policy (build_labels.h); nullopt before.
  std::optional<BuildRecord> BuildRecordOf(const Policy& policy) const override;

  const EngineClient& engine() const { return *engine_; }
  // The pool for `policy` (created on first use when pool_size > 0), for benchmarks and tests.
  ContainerPool* PoolFor(const Policy& policy);
  // OK when the policy's (mapped) image is in the engine; else an error naming it and how to provide it.
  Status ImagePresent(const Policy& policy) const;
  // container.build (docker_builder.h): the policy's environment as an image of the engine, built
  // now unless every step's image is there already. The base image is pulled if missing.
  Result<EnvironmentBuild> BuildEnvironment(const Policy& policy, const BuildProgress& progress) override;

 private:
  explicit DockerBackend(DockerBackendOptions opts) : opts_(std::move(opts)) {}
  Result<nlohmann::json> SpecFor(const Policy& policy, bool pooled) const;
  // The image a box of `policy` runs: the mapped container.image, or its built environment.
  Result<std::string> ImageFor(const Policy& policy) const;
  // Why this process cannot attach to the engine's containers from the engine's host (build steps'
  // egress, container.mounts' views): "not root", "talking to a remote engine", or "" when it can.
  std::string NotRootBesideTheEngine() const;
  Status EnsureBaseImage(const Policy& policy) const;
  // The bridge network of network-on boxes (kIsolatedNetwork), created once, checked to keep boxes apart.
  Status EnsureIsolatedNetwork();

  DockerBackendOptions opts_;
  std::shared_ptr<const EngineClient> engine_;
  std::shared_ptr<ContainerReaper> reaper_;  // used boxes are removed in the background
  ImageResolver images_;
  std::string init_path_;
  InitSource init_source_;
  std::unique_ptr<DockerEnvBuilder> builder_;
  std::string owner_;
  std::vector<std::string> runtimes_;  // registered with the engine
  bool engine_seccomp_ = false;
  bool engine_remaps_ids_ = false;  // userns-remap or rootless: a box's uid is not the host's
  // "seccomp=<inline JSON or path>" for runc boxes (seccomp_profile.h); empty: the engine's default.
  std::string seccomp_opt_;
  struct Pooled {
    std::unique_ptr<ContainerPool> pool;
    std::set<std::string> policies;  // the policies whose boxes it gave (figures per policy)
  };
  mutable std::mutex pools_mu_;
  std::map<std::string, Pooled> pools_;  // keyed by BoxShape
  std::mutex network_mu_;
  bool network_ready_ = false;
  mutable std::mutex images_mu_;
  mutable std::set<std::string> images_seen_;  // mapped images known to be in the engine
};

}  // namespace lsb::docker
