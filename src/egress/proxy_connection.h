// One connection a program opened to its box's egress proxy, start to end (docs/network.md):
// read the request head, check the target against the policy, resolve it here, check every
// address, connect to one that passed, then (CONNECT) check the TLS ClientHello's SNI against the
// CONNECT name or (plain HTTP) rewrite the head, and relay. The answer is one event.
#pragma once

#include <atomic>
#include <vector>

#include "egress/box_ca.h"
#include "egress/egress_options.h"
#include "egress/egress_rules.h"
#include "egress/rate_limiter.h"
#include "egress/resolver.h"
#include "egress/secrets.h"
#include "egress/socket_io.h"
#include "protocol/messages.h"

namespace lsb::egress {

struct ConnectionContext {
  const EgressRules* rules = nullptr;
  const Resolver* resolver = nullptr;
  const std::vector<IpAddress>* host_own = nullptr;
  const EgressOptions* opts = nullptr;
  std::atomic<uint64_t>* bytes_used = nullptr;  // the execution's
  const std::vector<HeaderSecret>* secrets = nullptr;  // network.secrets, resolved; may be null
  BoxCa* ca = nullptr;              // with secrets: terminates the program's TLS to their hosts
  SSL_CTX* upstream_tls = nullptr;  // with ca: verifies those hosts' certificates
  Waits waits;
  RateLimiter* rate = nullptr;      // the box's bandwidth cap; null: none
};

// Serves `client` (non-blocking) to its end; the event says what happened (kind "egress";
// decision "allowed", "denied" with a network_denied alert, or "failed" for an upstream that could
// not be reached). time_ms is left for the caller.
protocol::Event ServeConnection(int client, const ConnectionContext& ctx);

}  // namespace lsb::egress
