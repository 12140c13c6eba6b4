// Where the Docker engine listens: a unix socket (the default) or tcp://host:port (DOCKER_HOST).
// Podman's Docker-compatible socket is just another unix endpoint.
#pragma once

#include <string>

#include "base/result.h"

namespace lsb::docker {

struct Endpoint {
  enum class Kind { kUnix, kTcp };
  Kind kind = Kind::kUnix;
  std::string path = "/var/run/docker.sock";  // kUnix
  std::string host;                           // kTcp
  int port = 0;                               // kTcp
  // "unix:///var/run/docker.sock" or "tcp://127.0.0.1:2375", for messages.
  std::string ToString() const;
};

// Parses "unix:///path", "tcp://host:port" (also "host:port", "[::1]:port"); TLS is not supported.
Result<Endpoint> ParseEndpoint(const std::string& text);

// $DOCKER_HOST when set, else the default unix socket.
Result<Endpoint> DefaultEndpoint();

}  // namespace lsb::docker
