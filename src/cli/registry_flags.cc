#include "cli/registry_flags.h"

#include "image/store_puller.h"

namespace lsb::cli {

const char* const kRegistryFlagsUsage =
    "  --store DIR              the image store (default $LLM_SANDBOX_IMAGE_STORE, else\n"
    "                           <state dir>/images; docs/images.md)\n"
    "  --insecure-registry HOST allow plain HTTP to HOST[:PORT] (loopback registries always may)\n"
    "  --ca-file FILE           trust this CA bundle for the registry (also read:\n"
    "                           /etc/docker/certs.d/HOST:PORT/*.crt, and the system's CAs)\n"
    "  --certs-dir DIR          instead of /etc/docker/certs.d\n"
    "  --registry-mirror URL    try this Docker Hub mirror first (repeatable)\n"
    "  registry credentials: $DOCKER_CONFIG/config.json or ~/.docker/config.json (`docker login`)\n";

const std::vector<std::string>& RegistryFlagNames() {
  static const std::vector<std::string> names = {"--insecure-registry", "--ca-file", "--certs-dir",
                                                 "--registry-mirror"};
  return names;
}

void ApplyRegistryFlag(const std::string& name, const std::string& value, image::PullOptions& opts) {
  if (name == "--insecure-registry") opts.insecure_registries.push_back(value);
  else if (name == "--ca-file") opts.ca_file = value;
  else if (name == "--certs-dir") opts.certs_dir = value;
  else if (name == "--registry-mirror") opts.docker_hub_mirrors.push_back(value);
}

Status WireImageStore(const std::string& store_dir, image::PullOptions opts, BackendOptions& bo) {
  auto wired = image::MakeStoreAndPuller(store_dir, std::move(opts));
  if (!wired.ok()) {
    if (store_dir.empty() && image::DefaultStoreDir().empty()) return OkStatus();
    return wired.error();
  }
  bo.image_source = wired->store;
  bo.image_puller = wired->puller;
  return OkStatus();
}

}  // namespace lsb::cli
