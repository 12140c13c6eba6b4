// Choosing a backend by name: the one place that knows which backends exist.
// "auto": native, unless the caller opts into the Docker preference (the daemon does, DESIGN §2):
// then Docker when an engine answers AND it can serve every policy given (each passes the Docker
// backend's Check and its image is in the engine), else native; the reason is returned in
// `AutoChoice` so the caller can log it. A backend is never picked that it is known cannot enforce a
// policy it was asked to serve: Check errors name the control.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "egress/egress_options.h"
#include "image/image_puller.h"
#include "image/image_source.h"
#include "policy/policy.h"
#include "runtime/backend.h"

namespace lsb {

// Options any backend may use; each takes what it needs.
struct BackendOptions {
  std::string images_file;  // the image map (--images): native rootfs and the docker: section
  std::string init_path;    // llm-sandbox-init ("" = search)
  size_t pool_size = 0;     // docker: warm containers kept per policy (0 = start each box on demand)
  // docker: a named volume holding llm-sandbox-init ("" = $LLM_SANDBOX_INIT_VOLUME, else detected
  // when the caller itself runs in a container of the same engine; see docs/docker.md).
  std::string init_volume;
  bool auto_docker = false;       // "auto" prefers Docker when an engine answers (the daemon)
  std::vector<Policy> policies;   // "auto" with auto_docker: the policies Docker must be able to serve
  // native: the image store and registry client container.image falls back to after the image
  // map (runtime/native/box_root.h); absent = only the map resolves images.
  std::shared_ptr<const image::ImageSource> image_source;
  std::shared_ptr<image::ImagePuller> image_puller;
  egress::EgressOptions egress;  // native: the egress proxy's pins and limits (docs/network.md)
  // native: container.build's progress lines (the CLI's stderr, the daemon's log).
  std::function<void(const std::string&)> build_progress;
  // container.mounts' sources must be under one of these (serve/run --mount-root; mount_roots.h).
  std::vector<std::string> mount_roots;
  // container.build's events (the daemon's image_build events; runtime/build_events.h).
  std::function<void(nlohmann::json)> build_event;
  // native: boxes from a fork server (runtime/native/fork_server.h), and the sources it compiles
  // once (the one-shot prelude, the session driver). The daemon's only (on by default). Asked for
  // (serve --fork-server): choosing the native backend, and an error where it cannot be had; by
  // default: used where the native backend has its parts, and the Docker backend ignores it.
  bool fork_server = false;
  bool fork_server_asked = false;
  std::vector<std::string> fork_server_sources;
  bool font_cache = false;  // native: matplotlib's font list built once (native/font_cache.h)
};

// Names accepted by MakeBackend, "auto" first.
std::vector<std::string> BackendNames();

// `name`: "auto" | "native" | "docker". An unknown name is an error listing the known ones.
// `why` (optional) receives one line on how "auto" decided.
Result<std::unique_ptr<Backend>> MakeBackend(const std::string& name, const BackendOptions& opts = {},
                                             std::string* why = nullptr);

}  // namespace lsb
