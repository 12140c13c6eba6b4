#include "egress/egress_options.h"

#include "egress/box_ca.h"
#include "egress/secrets.h"
#include "policy/units.h"

namespace lsb::egress {

Result<std::pair<std::string, IpAddress>> ParseResolvePin(const std::string& text) {
  size_t colon = text.find(':');
  if (colon == std::string::npos)
    return Error::InvalidArgument("egress-resolve", "--egress-resolve '" + text + "': write NAME:ADDRESS, e.g. "
                                                    "allowed.test:127.0.0.1");
  auto name = NormalizeHostName(text.substr(0, colon));
  if (!name.ok())
    return Error::InvalidArgument("egress-resolve", "--egress-resolve '" + text + "': " + name.error().message);
  auto addr = ParseIpLiteral(text.substr(colon + 1));
  if (!addr)
    return Error::InvalidArgument("egress-resolve", "--egress-resolve '" + text + "': '" + text.substr(colon + 1) +
                                                        "' is not an IPv4 or IPv6 address");
  return std::make_pair(*name, *addr);
}

Result<bool> ApplyEgressFlag(const std::string& flag, const std::string& value, EgressOptions& opts) {
  auto count = [&](uint64_t* out) -> Status {
    if (value.empty() || value.size() > 12 || value.find_first_not_of("0123456789") != std::string::npos ||
        std::stoull(value) == 0)
      return Error::InvalidArgument(flag, flag + " wants a positive integer, got '" + value + "'");
    *out = std::stoull(value);
    return OkStatus();
  };
  if (flag == "--egress-resolve") {
    LSB_ASSIGN_OR_RETURN(auto pin, ParseResolvePin(value));
    auto& list = opts.pins[pin.first];
    if (list.size() < 16) list.push_back(pin.second);
    return true;
  }
  if (flag == "--secrets-file") {
    if (auto file = ReadSecretsFile(value); !file.ok()) return file.error();
    opts.secrets_file = value;
    return true;
  }
  if (flag == "--egress-upstream-ca") {
    if (auto ctx = UpstreamContext(value); !ctx.ok()) return Error::InvalidArgument(flag, ctx.error().message);
    opts.upstream_ca_file = value;
    return true;
  }
  if (flag == "--egress-max-connections") {
    uint64_t n = 0;
    LSB_TRY(count(&n));
    opts.max_connections = static_cast<uint32_t>(std::min<uint64_t>(n, 4096));
    return true;
  }
  if (flag == "--egress-max-connections-total") {
    uint64_t n = 0;
    LSB_TRY(count(&n));
    opts.max_connections_total = static_cast<uint32_t>(std::min<uint64_t>(n, 65536));
    return true;
  }
  if (flag == "--egress-idle-timeout") {
    uint64_t n = 0;
    LSB_TRY(count(&n));
    opts.idle_timeout_ms = n * 1000;
    return true;
  }
  if (flag == "--egress-max-bytes") {
    auto n = units::ParseBytes(value);
    if (!n.ok() || *n == 0)
      return Error::InvalidArgument(flag, flag + ": " + (n.ok() ? std::string("must be positive") : n.error().message));
    opts.max_bytes_per_run = *n;
    return true;
  }
  if (flag == "--egress-max-bandwidth") {
    auto n = units::ParseBytes(value);
    if (!n.ok())
      return Error::InvalidArgument(flag, flag + ": " + n.error().message + " (bytes per second, e.g. 10M; 0 for no cap)");
    opts.max_bytes_per_second = *n;
    return true;
  }
  return false;
}

}  // namespace lsb::egress
