#include "runtime/docker/endpoint.h"

#include <cstdlib>

namespace lsb::docker {

std::string Endpoint::ToString() const {
  if (kind == Kind::kUnix) return "unix://" + path;
  bool v6 = host.find(':') != std::string::npos;
  return "tcp://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<Endpoint> ParseEndpoint(const std::string& text) {
  const std::string hint = " (expected unix:///path/to/docker.sock or tcp://host:port)";
  Endpoint ep;
  if (text.rfind("unix://", 0) == 0) {
    ep.path = text.substr(7);
    if (ep.path.empty() || ep.path[0] != '/') return Error{"bad Docker endpoint '" + text + "'" + hint};
    return ep;
  }
  if (text.rfind("https://", 0) == 0 || text.rfind("ssh://", 0) == 0 || text.rfind("npipe://", 0) == 0) {
    return Error{"Docker endpoint '" + text + "' is not supported: only plain unix and tcp are" + hint};
  }
  std::string rest = text.rfind("tcp://", 0) == 0 ? text.substr(6) : text;
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  ep.kind = Endpoint::Kind::kTcp;
  std::string port;
  if (!rest.empty() && rest[0] == '[') {
    size_t close = rest.find(']');
    if (close == std::string::npos || close + 1 >= rest.size() || rest[close + 1] != ':')
      return Error{"bad Docker endpoint '" + text + "'" + hint};
    ep.host = rest.substr(1, close - 1);
    port = rest.substr(close + 2);
  } else {
    size_t colon = rest.rfind(':');
    if (colon == std::string::npos) return Error{"bad Docker endpoint '" + text + "': no port" + hint};
    ep.host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  }
  if (ep.host.empty() || port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos)
    return Error{"bad Docker endpoint '" + text + "'" + hint};
  ep.port = std::stoi(port);
  if (ep.port <= 0 || ep.port > 65535) return Error{"bad Docker endpoint '" + text + "': port out of range"};
  return ep;
}

Result<Endpoint> DefaultEndpoint() {
  const char* env = std::getenv("DOCKER_HOST");
  if (env && *env) {
    auto ep = ParseEndpoint(env);
    if (!ep.ok()) return ep.error().Wrap("DOCKER_HOST");
    return ep;
  }
  return Endpoint{};
}

}  // namespace lsb::docker
