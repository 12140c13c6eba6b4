#include "runtime/backend_select.h"

#include "runtime/docker/docker_backend.h"
#include "runtime/native/native_backend.h"

namespace lsb {

std::vector<std::string> BackendNames() { return {"auto", "native", "docker"}; }

Result<std::unique_ptr<Backend>> MakeBackend(const std::string& name, const BackendOptions& opts) {
  if (name == "auto" || name == "native" || name.empty()) {
    native::NativeOptions n;
    n.images_file = opts.images_file;
    n.init_path = opts.init_path;
    return std::unique_ptr<Backend>(new native::NativeBackend(n));
  }
  if (name == "docker") {
    docker::DockerBackendOptions d;  // endpoint: $DOCKER_HOST or the local socket
    d.images_file = opts.images_file;
    d.init_path = opts.init_path;
    auto b = docker::DockerBackend::Create(d);
    if (!b.ok()) return b.error();
    return std::unique_ptr<Backend>(std::move(*b));
  }
  std::string known;
  for (const auto& b : BackendNames()) known += (known.empty() ? "" : ", ") + b;
  return Error{"unknown backend '" + name + "'; known: " + known};
}

}  // namespace lsb
