#include "runtime/docker/init_source.h"

#include <unistd.h>

#include <cstdlib>

namespace lsb::docker {
namespace {

std::string DirName(const std::string& p) {
  size_t s = p.rfind('/');
  return s == std::string::npos || s == 0 ? "/" : p.substr(0, s);
}

std::string BaseName(const std::string& p) {
  size_t s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

// The volume mounted at `dir` in the container this process runs in, or "" (not in a container of
// this engine, or `dir` is not a volume). The container is found by its hostname, which the engine
// sets to the short container id unless --hostname overrides it ($LLM_SANDBOX_INIT_VOLUME then).
std::string OwnContainerVolumeAt(const EngineClient& engine, const std::string& dir) {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0 || !*host) return "";
  auto insp = engine.InspectContainer(host);
  if (!insp.ok() || !insp->contains("Mounts") || !(*insp)["Mounts"].is_array()) return "";
  // Make sure the container found is this process's: its State.Pid's namespace is ours only if we
  // are PID-namespaced in it; the cheap check is that it is running and has the mount we expect.
  if (!insp->contains("State") || !(*insp)["State"].value("Running", false)) return "";
  for (const auto& m : (*insp)["Mounts"]) {
    if (m.value("Type", "") == "volume" && m.value("Destination", "") == dir) return m.value("Name", "");
  }
  return "";
}

}  // namespace

std::string InitSource::ToString() const {
  return volume.empty() ? "bind mount of " + host_path : "volume '" + volume + "' (file " + file + ")";
}

Result<InitSource> ResolveInitSource(const EngineClient& engine, const std::string& init_path,
                                     const std::string& explicit_volume) {
  InitSource s;
  std::string vol = explicit_volume;
  if (vol.empty()) {
    if (const char* env = std::getenv("LLM_SANDBOX_INIT_VOLUME"); env && *env) vol = env;
  }
  if (!vol.empty()) {
    s.volume = vol;
    s.file = BaseName(init_path);
    return s;
  }
  if (const char* env = std::getenv("LLM_SANDBOX_INIT_HOST_PATH"); env && *env) {
    if (env[0] != '/') return Error{std::string("$LLM_SANDBOX_INIT_HOST_PATH '") + env + "' must be absolute"};
    s.host_path = env;
    return s;
  }
  std::string found = OwnContainerVolumeAt(engine, DirName(init_path));
  if (!found.empty()) {
    s.volume = found;
    s.file = BaseName(init_path);
    return s;
  }
  s.host_path = init_path;
  return s;
}

}  // namespace lsb::docker
