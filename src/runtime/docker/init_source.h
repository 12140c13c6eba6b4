// Where sibling containers get llm-sandbox-init from. The engine resolves a bind-mount source on
// ITS host, so the init path this process sees is only usable when this process and the engine
// share a filesystem. When the daemon itself runs in a container of the same engine (the
// orchestrator image: it reaches the engine through the host's socket), its init lives in a
// volume the engine knows by name, and each sandbox mounts that volume read-only instead.
//
// Order: an explicit volume (option, then $LLM_SANDBOX_INIT_VOLUME); an explicit host path
// ($LLM_SANDBOX_INIT_HOST_PATH); else, if this process runs in a container of this engine whose
// mount at init's directory is a volume, that volume; else the init path as a bind mount.
#pragma once

#include <string>

#include "base/result.h"
#include "runtime/docker/engine_client.h"

namespace lsb::docker {

struct InitSource {
  std::string volume;     // a named volume with the init file at its root, or ""
  std::string file;       // the init file's name inside the volume (volume only)
  std::string host_path;  // a path on the engine's host (bind mount), when no volume
  std::string ToString() const;
};

// `init_path`: the static init this process found (FindStaticInit); `explicit_volume` may be "".
Result<InitSource> ResolveInitSource(const EngineClient& engine, const std::string& init_path,
                                     const std::string& explicit_volume);

}  // namespace lsb::docker
