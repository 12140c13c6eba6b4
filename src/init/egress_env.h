// The proxy variables a box with the egress proxy gets (docs/network.md): the standard names, both
// cases, so pip, git, curl, npm, requests and urllib find the proxy without configuration. They
// override what the run set: nothing else is reachable from the box anyway.
#pragma once

#include <map>
#include <string>

namespace lsb::init {

// `proxy` is "127.0.0.1:3128" (BoxSetup.egress_proxy); nothing is added when it is empty.
void AddEgressProxyEnv(std::map<std::string, std::string>& env, const std::string& proxy);

}  // namespace lsb::init
