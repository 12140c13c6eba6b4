// What an operator sets for every box's egress proxy (docs/network.md "Limits"), and the defaults
// enforced when nothing is set.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "egress/connection_slots.h"
#include "policy/network_rules.h"

namespace lsb::egress {

struct EgressOptions {
  // --egress-resolve NAME:ADDR: where NAME points, instead of asking DNS (tests, air-gapped
  // operators). A pin never makes an address allowed: the address is checked like any other.
  std::map<std::string, std::vector<IpAddress>> pins;
  uint32_t max_connections = 32;                // open at once, per box; more are refused
  // Open at once across every box of this process (all copies of these options share `slots`).
  uint32_t max_connections_total = 512;
  std::shared_ptr<ConnectionSlots> slots = std::make_shared<ConnectionSlots>();
  uint64_t max_bytes_per_run = 1ull << 30;      // both directions, per execution
  uint64_t max_bytes_per_second = 1ull << 30;   // both directions, per box (rate_limiter.h); 0: no cap
  uint64_t idle_timeout_ms = 60000;             // no byte either way for this long: closed
  uint64_t connect_timeout_ms = 10000;          // to the upstream address
  uint64_t head_timeout_ms = 10000;             // for the request head / TLS ClientHello
  size_t max_events_per_run = 4096;             // kept for the runner; more are counted, not kept
  // --secrets-file PATH: NAME=value lines for network.secrets' ${NAME} (secrets.h), read again at
  // every box start (a rotated token reaches the next box); "" for the environment only.
  std::string secrets_file;
  // --egress-upstream-ca FILE: the only CA certificates (PEM) the proxy trusts when it speaks TLS
  // to a secret's host itself; "" is the host's trust store. For tests and private CAs.
  std::string upstream_ca_file;
};

// "NAME:ADDR" (ADDR an IPv4 or IPv6 literal, "[...]" allowed) -> the pin. The error says what is wrong.
Result<std::pair<std::string, IpAddress>> ParseResolvePin(const std::string& text);

// The operator's flags, the same for `llm-sandbox run` and `serve` (docs/network.md):
// --egress-resolve NAME:ADDR (repeatable), --egress-max-connections N,
// --egress-max-connections-total N, --egress-max-bytes BYTES, --egress-max-bandwidth BYTES (per second, 0: no cap),
// --egress-idle-timeout SECONDS, --secrets-file PATH (checked now: it must parse and be mode 600),
// --egress-upstream-ca FILE.
// False: `flag` is none of them.
Result<bool> ApplyEgressFlag(const std::string& flag, const std::string& value, EgressOptions& opts);

}  // namespace lsb::egress
