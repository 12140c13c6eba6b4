// A Docker (runc) box's egress proxy (docs/network.md "Docker"): the container runs with network
// mode "none" (its own namespace, loopback only); once it runs, this process (root, on the
// engine's host) makes the proxy's listening socket 127.0.0.1:3128 inside that namespace from a
// short-lived thread that joins it, and serves it from the host's namespace with the same
// EgressProxy as the native backend. The box then reaches nothing but that socket.
// Not for gVisor (runsc): the socket would be in the sandbox's host-side namespace, which gVisor's
// own network stack never sees.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "egress/box_egress.h"
#include "egress/egress_proxy.h"
#include "runtime/docker/engine_client.h"

namespace lsb::docker {

// The listening socket kEgressProxyAddress in the network namespace of process `pid`. Refused
// (fail closed) when that namespace is this process's own or has any interface but loopback
// (a route out); loopback is brought up if it is down.
Result<UniqueFd> ListenInNetworkOf(pid_t pid);

// The running proxy of the box whose init is process `pid` (the container's State.Pid).
Result<std::unique_ptr<egress::EgressProxy>> AttachEgress(pid_t pid, egress::BoxEgress egress,
                                                          const egress::EgressOptions& opts);

// The same for a running container, found by id: its pid read from the engine, and checked again
// after the namespace is opened (a pid reused in between is never joined). The engine must be
// local and its pids visible in this process's /proc.
Result<std::unique_ptr<egress::EgressProxy>> AttachEgress(const EngineClient& engine, const std::string& container_id,
                                                          egress::BoxEgress egress, const egress::EgressOptions& opts);

}  // namespace lsb::docker
