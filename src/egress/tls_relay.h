// The byte pump between two TLS ends the proxy terminated (tls_end.h): plaintext from the program
// to the upstream and back, the back direction through the secret mask, with the same idle
// timeout, byte budget and stop descriptor as the plain relay (relay.h).
#pragma once

#include "egress/relay.h"
#include "egress/tls_end.h"

namespace lsb::egress {

RelayResult RelayTls(TlsEnd& client, TlsEnd& upstream, const RelayLimits& limits, const Waits& w);

}  // namespace lsb::egress
