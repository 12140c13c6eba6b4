#include "runtime/backend_select.h"

#include <cstdio>
#include <cstdlib>
#include <optional>

#include "policy/backend_choice.h"
#include "runtime/docker/docker_backend.h"
#include "runtime/native/fork_server.h"
#include "runtime/native/init_binary.h"
#include "runtime/native/native_backend.h"

namespace lsb {
namespace {

// An explicit --fork-server that cannot be honoured is an error at start, never a daemon that
// quietly starts every box on its own: its library must be beside the init binary it runs. (The
// fork server is a speed, not a control: by default a daemon without the library says so and
// starts each box on its own.)
Status CheckForkServerParts(const BackendOptions& opts) {
  if (!opts.fork_server) return OkStatus();
  auto init = native::OpenInitBinary(opts.init_path);
  if (!init.ok()) return init.error().Wrap("--fork-server");
  if (auto lib = native::OpenForkLibrary(init->path); !lib.ok())
    return Error{"--fork-server: " + lib.error().message +
                 "; build it (cmake --build build --target lsb-fork) or start without --fork-server"};
  return OkStatus();
}

Result<std::unique_ptr<Backend>> MakeNative(const BackendOptions& opts) {
  bool fork_server = opts.fork_server;
  if (auto parts = CheckForkServerParts(opts); !parts.ok()) {
    if (opts.fork_server_asked) return parts.error();
    std::fprintf(stderr, "llm-sandbox: %s: every box starts its own python\n", parts.error().message.c_str());
    fork_server = false;
  }
  native::NativeOptions n;
  n.images_file = opts.images_file;
  n.init_path = opts.init_path;
  const char* lo = std::getenv("LLM_SANDBOX_NATIVE_LOOPBACK");  // docs/security.md: loopback up
  n.loopback_up = lo && std::string(lo) == "up";
  n.fork_server = fork_server;
  n.fork_server_sources = opts.fork_server_sources;
  n.font_cache = opts.font_cache;
  n.image_source = opts.image_source;
  n.image_puller = opts.image_puller;
  n.egress = opts.egress;
  n.build_progress = opts.build_progress;
  n.mount_roots = opts.mount_roots;
  n.build_event = opts.build_event;
  return std::unique_ptr<Backend>(std::make_unique<native::NativeBackend>(n));
}

Result<std::unique_ptr<docker::DockerBackend>> MakeDocker(const BackendOptions& opts, bool probing) {
  docker::DockerBackendOptions d;  // endpoint: $DOCKER_HOST or the local socket
  d.images_file = opts.images_file;
  d.init_path = opts.init_path;
  d.init_volume = opts.init_volume;
  d.pool_size = opts.pool_size;
  d.egress = opts.egress;
  d.build_progress = opts.build_progress;
  d.build_event = opts.build_event;
  d.mount_roots = opts.mount_roots;
  if (probing) d.client.connect_timeout = std::chrono::milliseconds(1000);
  return docker::DockerBackend::Create(d);
}

// Every reason the Docker backend cannot serve `policies` ("" when it can serve them all).
std::string DockerCannotServe(docker::DockerBackend& b, const std::vector<Policy>& policies) {
  std::string out;
  for (const auto& p : policies) {
    auto st = b.Check(p);
    if (!st.ok()) {
      out += "\n  " + st.error().message;
      continue;
    }
    auto img = b.ImagePresent(p);
    if (!img.ok()) out += "\n  policy '" + p.name + "': " + img.error().message;
  }
  return out;
}

}  // namespace

std::vector<std::string> BackendNames() { return BackendKindSpellings(); }

Result<std::unique_ptr<Backend>> MakeBackend(const std::string& name, const BackendOptions& opts, std::string* why) {
  auto say = [&](std::string s) {
    if (why) *why = std::move(s);
  };
  // "" is auto; a name that is no backend's falls through to the error at the end.
  const std::optional<BackendKind> kind = name.empty() ? BackendKind::kAuto : ParseBackendKind(name);
  if (kind == BackendKind::kNative || (kind == BackendKind::kAuto && !opts.auto_docker)) return MakeNative(opts);
  if (kind == BackendKind::kAuto) {
    if (opts.fork_server_asked) {  // the fork server is the native backend's: asking for it is choosing it
      say("auto: native (the fork server is the native backend's)");
      return MakeNative(opts);
    }
    auto b = MakeDocker(opts, /*probing=*/true);
    if (!b.ok()) {
      say("auto: native (no usable Docker engine: " + b.error().message + ")");
      return MakeNative(opts);
    }
    std::string problems = DockerCannotServe(**b, opts.policies);
    if (!problems.empty()) {
      say("auto: native, because the Docker engine at " + (*b)->engine().endpoint().ToString() +
          " cannot serve every policy (choose --backend docker to use it anyway):" + problems);
      return MakeNative(opts);
    }
    say("auto: docker (the engine at " + (*b)->engine().endpoint().ToString() + " answers and serves all " +
        std::to_string(opts.policies.size()) + " policies)");
    return std::unique_ptr<Backend>(std::move(*b));
  }
  if (kind == BackendKind::kDocker) {
    if (opts.fork_server_asked)
      return Error{"--fork-server is the native backend's (a python box forked from a warm interpreter); the Docker "
                   "backend pools containers instead: drop --fork-server or choose --backend native"};
    auto b = MakeDocker(opts, /*probing=*/false);
    if (!b.ok()) return b.error();
    std::string problems = DockerCannotServe(**b, opts.policies);
    if (!problems.empty()) say("docker: executions under these policies will be refused:" + problems);
    return std::unique_ptr<Backend>(std::move(*b));
  }
  std::string known;
  for (const auto& b : BackendNames()) known += (known.empty() ? "" : ", ") + b;
  return Error{"unknown backend '" + name + "'; known: " + known};
}

}  // namespace lsb
