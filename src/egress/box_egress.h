// One box's egress, prepared before the box starts and served once its listening socket exists
// (docs/network.md): the same steps on every backend. Prepare first (a secret that cannot be
// filled refuses the box before anything starts; the box's CA is made so its certificate can go
// into init's setup), then Serve the listening socket the backend made in the box's namespace.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "egress/box_ca.h"
#include "egress/egress_options.h"
#include "egress/egress_proxy.h"
#include "egress/secrets.h"
#include "policy/policy.h"

namespace lsb::egress {

struct BoxEgress {
  std::vector<std::string> allow, deny;
  std::vector<HeaderSecret> secrets;  // resolved (values filled)
  std::shared_ptr<BoxCa> ca;          // only with secrets: HTTPS to their hosts is terminated with it
  // What init's setup gets (BoxSetup.egress_ca_pem): "" without secrets.
  std::string ca_pem() const { return ca ? ca->cert_pem() : std::string(); }
};

// `secrets` as the policy wrote them (${VAR} unresolved): filled from opts.secrets_file, then this
// process's environment (secrets.h); with any, the box's CA is made for their hosts.
Result<BoxEgress> PrepareBoxEgress(const std::vector<std::string>& allow, const std::vector<std::string>& deny,
                                   const std::vector<NetworkSecret>& secrets, const EgressOptions& opts);

// The running proxy on `listener` (a listening socket in the box's network namespace).
Result<std::unique_ptr<EgressProxy>> ServeBoxEgress(UniqueFd listener, BoxEgress egress, const EgressOptions& opts);

}  // namespace lsb::egress
