// One container whose PID 1 is llm-sandbox-init, with the attach stream pumped onto a socketpair.
// Owning the object owns the container: the destructor kills and removes it (RAII), whatever path
// the caller took.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "egress/egress_proxy.h"
#include "runtime/backend.h"
#include "runtime/docker/container_reaper.h"
#include "runtime/docker/engine_client.h"
#include "runtime/docker/host_mount_views.h"
#include "runtime/docker/stream_pump.h"

namespace lsb::docker {

class DockerBox : public Box {
 public:
  // create -> attach -> start (attach before start, so not one byte of init's output is lost).
  // On any failure the container is removed before returning the error.
  // `reaper` (optional): where the destructor hands the container for removal in the background;
  // without one the destructor removes it itself.
  static Result<std::unique_ptr<DockerBox>> Launch(std::shared_ptr<const EngineClient> engine,
                                                   const nlohmann::json& spec,
                                                   std::shared_ptr<ContainerReaper> reaper = nullptr);
  ~DockerBox() override;

  int stream_fd() const override { return pump_->fd(); }
  BoxVerdict Verdict() override;
  // Live CPU/RAM from the container's cgroup files (local engine) or the engine's stats.
  std::optional<BoxUsage> Usage() override;
  void Kill() override;
  std::string id() const override { return "docker-" + container_id_.substr(0, 12); }
  std::string Diagnostics() override;

  const std::string& container_id() const { return container_id_; }
  // The stream still flows (init has not exited, the engine has not dropped us).
  bool alive() const { return pump_ && pump_->alive(); }

  // A warm pool's box: kSetup was sent and init answered kReady (container_pool.h, HandshakeAhead).
  std::optional<protocol::InitReady> ReadyAhead() const override { return ready_ahead_; }
  void set_ready_ahead(protocol::InitReady ready) { ready_ahead_ = std::move(ready); }

  // The box's egress proxy (egress_attach.h), served until the box goes; its events join each run's.
  void set_egress(std::unique_ptr<egress::EgressProxy> proxy) { proxy_ = std::move(proxy); }
  // container.mounts' views (host_mount_views.h): kept until the container is handed for removal.
  void set_mount_views(std::unique_ptr<HostMountViews> views) { mount_views_ = std::move(views); }
  void BeginRun() override {
    if (proxy_) proxy_->BeginRun();
  }
  std::vector<protocol::Event> TakeHostEvents(bool run_ended) override;

 private:
  DockerBox(std::shared_ptr<const EngineClient> engine, std::string id)
      : engine_(std::move(engine)), container_id_(std::move(id)) {}

  std::shared_ptr<const EngineClient> engine_;
  std::shared_ptr<ContainerReaper> reaper_;
  std::string container_id_;
  std::unique_ptr<StreamPump> pump_;
  std::string death_note_;  // how the container ended, once known
  std::optional<protocol::InitReady> ready_ahead_;
  std::unique_ptr<egress::EgressProxy> proxy_;  // stopped first (destructor)
  std::unique_ptr<HostMountViews> mount_views_;   // detached after the destructor let the container go
};

// The box's cgroup counters read straight from the host's cgroup files when the engine is local
// (exact: OOM kill count, pids.max hits, memory peak), else from the engine's stats.
BoxVerdict ReadVerdict(const EngineClient& engine, const std::string& container_id);

// A live sample of the running container, from the same sources as ReadVerdict.
BoxUsage ReadUsage(const EngineClient& engine, const std::string& container_id);

}  // namespace lsb::docker
