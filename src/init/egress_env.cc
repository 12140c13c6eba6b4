#include "init/egress_env.h"

namespace lsb::init {

void AddEgressProxyEnv(std::map<std::string, std::string>& env, const std::string& proxy) {
  if (proxy.empty()) return;
  const std::string url = "http://" + proxy;
  for (const char* name : {"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"})
    env[name] = url;
  // Empty: everything goes through the proxy. A direct connection could only reach the box's own
  // loopback, and even that is refused (init's watch, Landlock: TCP to the proxy's port only).
  env["NO_PROXY"] = env["no_proxy"] = "";
}

}  // namespace lsb::init
