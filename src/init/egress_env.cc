#include "init/egress_env.h"

#include "base/io.h"

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

void AddEgressCaEnv(std::map<std::string, std::string>& env, const std::string& bundle_path) {
  for (const char* name : {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "PIP_CERT", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
                           "GIT_SSL_CAINFO"})
    env[name] = bundle_path;
}

std::string EgressCaBundle(const std::string& box_ca_pem) {
  std::string bundle;
  for (const char* path : {"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"}) {
    if (auto text = ReadFile(path); text.ok() && !text->empty()) {
      bundle = std::move(*text);
      if (bundle.back() != '\n') bundle += '\n';
      break;
    }
  }
  return bundle + box_ca_pem;
}

}  // namespace lsb::init
