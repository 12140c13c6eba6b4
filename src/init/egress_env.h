// The proxy variables a box with the egress proxy gets (docs/network.md): the standard names, both
// cases, so pip, git, curl, npm, requests and urllib find the proxy without configuration. They
// override what the run set: nothing else is reachable from the box anyway.
#pragma once

#include <map>
#include <string>

namespace lsb::init {

// `proxy` is "127.0.0.1:3128" (BoxSetup.egress_proxy); nothing is added when it is empty.
void AddEgressProxyEnv(std::map<std::string, std::string>& env, const std::string& proxy);

// With network.secrets the proxy terminates TLS to the secrets' hosts with the box's CA: the
// program's TLS clients trust the bundle init writes (the image's own CAs plus the box CA), by
// the names OpenSSL, curl, requests, pip, git and Node read. They override what the run set.
inline constexpr const char* kEgressCaFileName = "lsb-egress-ca.pem";  // in the job directory
void AddEgressCaEnv(std::map<std::string, std::string>& env, const std::string& bundle_path);
// The bundle: the image's CA certificates (the first of the usual bundle files that exists) and
// `box_ca_pem` after them.
std::string EgressCaBundle(const std::string& box_ca_pem);

}  // namespace lsb::init
