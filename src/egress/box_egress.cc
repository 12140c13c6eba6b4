#include "egress/box_egress.h"

#include <algorithm>
#include <map>

namespace lsb::egress {

Result<BoxEgress> PrepareBoxEgress(const std::vector<std::string>& allow, const std::vector<std::string>& deny,
                                   const std::vector<NetworkSecret>& secrets, const EgressOptions& opts) {
  BoxEgress out;
  out.allow = allow;
  out.deny = deny;
  // Checked now, not when the first request comes: a bad rule refuses the box.
  LSB_ASSIGN_OR_RETURN(EgressRules rules, EgressRules::Parse(allow, deny));
  (void)rules;
  if (secrets.empty()) return out;
  std::map<std::string, std::string> file_values;
  if (!opts.secrets_file.empty()) {
    LSB_ASSIGN_OR_RETURN(file_values, ReadSecretsFile(opts.secrets_file));
  }
  LSB_ASSIGN_OR_RETURN(out.secrets, ResolveSecrets(secrets, file_values, opts.secrets_file));
  // The box's own CA, for HTTPS to the secrets' hosts: its certificate goes to init, its key stays here.
  std::vector<std::string> hosts;
  for (const auto& s : out.secrets)
    if (std::find(hosts.begin(), hosts.end(), s.host) == hosts.end()) hosts.push_back(s.host);
  auto made = BoxCa::Create(hosts);
  if (!made.ok()) return made.error().Wrap("make the box's CA for network.secrets over HTTPS");
  out.ca = std::move(*made);
  return out;
}

Result<std::unique_ptr<EgressProxy>> ServeBoxEgress(UniqueFd listener, BoxEgress egress, const EgressOptions& opts) {
  LSB_ASSIGN_OR_RETURN(EgressRules rules, EgressRules::Parse(egress.allow, egress.deny));
  auto made = EgressProxy::Create(std::move(listener), std::move(rules), opts, std::move(egress.secrets),
                                  std::move(egress.ca));
  if (!made.ok()) return made.error().Wrap("start the box's egress proxy");
  return made;
}

}  // namespace lsb::egress
