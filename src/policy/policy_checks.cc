#include "policy/policy_checks.h"

#include <functional>

#include "policy/languages.h"
#include "policy/network_rules.h"
#include "policy/units.h"

namespace lsb {
namespace {

// The position of the first of `keys` the policy set; the file itself (line 1) otherwise, so every
// diagnostic still carries file:line:column.
SourcePos PosOf(const Policy& p, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    auto it = p.positions.find(key);
    if (it != p.positions.end()) return it->second;
  }
  return SourcePos{p.source_file, 1, 1};
}

size_t IndexOf(const std::vector<std::string>& list, const std::string& item) {
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i] == item) return i;
  }
  return list.size();
}

using Report = std::function<void(SourcePos, std::string, std::string)>;

// network: lists only with the network on; gVisor only with the open network (its bridge: the
// egress proxy cannot reach gVisor's network stack); every secret's host reachable by the allowlist.
void CheckNetwork(const Policy& p, const Report& report) {
  const bool lists = !p.network_allow.empty() || !p.network_deny.empty() || !p.network_secrets.empty();
  if (!p.network_enabled) {
    if (lists)
      report(PosOf(p, {"network.allow", "network.deny", "network.secrets"}),
             "network.allow, deny and secrets only mean something with network.enabled: true",
             "add enabled: true under network:, or remove the lists");
    return;
  }
  if (p.backend == BackendKind::kDocker && p.runtime == ContainerRuntime::kRunsc && !p.NetworkUnfiltered())
    report(PosOf(p, {"network.allow", "network.enabled"}),
           "network: under container.runtime runsc the box's sockets are gVisor's own network stack, which the "
           "egress proxy cannot reach, so network.allow/deny/secrets are not enforced there (docs/network.md)",
           "write runtime: runc (or backend: native) for a name allowlist, or allow: [\"*\"] with no deny or "
           "secrets for the engine's bridge network");
  for (size_t i = 0; i < p.network_secrets.size(); ++i) {
    const NetworkSecret& s = p.network_secrets[i];
    bool reachable = false;
    for (const auto& text : p.network_allow) {
      auto rule = ParseNetworkRule(text);
      if (rule.ok() && rule->kind != NetworkRule::Kind::kAnyName && rule->kind != NetworkRule::Kind::kAddress &&
          RuleCovers(*rule, NetworkRule{NetworkRule::Kind::kName, s.host, {}, 0, rule->port, s.host}))
        reachable = true;
    }
    if (!reachable)
      report(PosOf(p, {"network.secrets"}),
             "network.secrets[" + std::to_string(i) + "].host: '" + s.host + "' is not named by network.allow",
             "add '" + s.host + "' (or a wildcard above it) to network.allow: a secret is only sent to a host the "
             "allowlist names, \"*\" does not count");
  }
}

}  // namespace

std::vector<PolicyDiagnostic> CheckPolicyConsistency(const Policy& p,
                                                     const std::vector<std::string>& explicit_languages) {
  std::vector<PolicyDiagnostic> out;
  auto report = [&](SourcePos pos, std::string message, std::string hint) {
    out.push_back(PolicyDiagnostic{std::move(pos), std::move(message), std::move(hint)});
  };

  for (size_t i = 0; i < p.deny.size(); ++i) {
    size_t a = IndexOf(p.allow, p.deny[i]);
    if (a == p.allow.size()) continue;
    std::string deny_key = "commands.deny[" + std::to_string(i) + "]";
    std::string allow_key = "commands.allow[" + std::to_string(a) + "]";
    report(PosOf(p, {deny_key.c_str(), "commands.deny"}),
           "commands: '" + p.deny[i] + "' is both allowed (" + PosOf(p, {allow_key.c_str()}).ToString() +
               ") and denied",
           "remove it from one of the two lists; a path is either allowed or denied");
  }

  if (p.runtime == ContainerRuntime::kRunsc) {
    if (!p.gvisor_accept_weaker) {
      report(PosOf(p, {"container.runtime"}),
             "container.runtime: runsc (gVisor) cannot enforce commands or watch exec/connect: Landlock and "
             "seccomp user notification do not exist under gVisor",
             "add 'gvisor_accept_weaker: true' under container: to accept that explicitly, or use runtime: runc");
    }
    if (p.backend == BackendKind::kNative) {
      report(PosOf(p, {"container.runtime"}), "container.runtime: runsc needs the docker backend, but backend is native",
             "write backend: docker (or auto), or runtime: runc");
    }
  } else if (p.gvisor_accept_weaker) {
    report(PosOf(p, {"container.gvisor_accept_weaker"}),
           "container.gvisor_accept_weaker: only means something with runtime: runsc",
           "remove the line, or add runtime: runsc under container:");
  }

  CheckNetwork(p, report);
  if (p.image == "host" && p.backend == BackendKind::kDocker) {
    report(PosOf(p, {"container.image", "backend"}),
           "container.image: 'host' (the host's system directories) exists only on the native backend",
           "name a Docker image, e.g. image: python:3.12-slim, or write backend: native (or auto)");
  }

  if (p.timeout_grace_ms > p.timeout_ms) {
    report(PosOf(p, {"resources.timeout_grace", "resources.timeout"}),
           "resources.timeout_grace: " + units::FormatDurationMs(p.timeout_grace_ms) + " is longer than resources.timeout " +
               units::FormatDurationMs(p.timeout_ms),
           "the grace is the time between SIGTERM and SIGKILL at the timeout; make it shorter than the timeout, e.g. 2s");
  }

  for (const auto& mount : p.tmpfs) {
    if (mount.size_bytes > p.memory_bytes) {
      report(PosOf(p, {("container.tmpfs." + mount.path).c_str()}),
             "container.tmpfs " + mount.path + ": size " + units::FormatBytes(mount.size_bytes) +
                 " is more than resources.memory " + units::FormatBytes(p.memory_bytes),
             "tmpfs pages count toward the memory limit, so filling it would end in an OOM kill instead of "
             "ENOSPC; make the size smaller than memory");
    }
  }

  const Language* def = p.FindLanguage(p.default_language);
  if (!def) {
    std::string known;
    for (const auto& [name, _] : p.languages) known += (known.empty() ? "" : ", ") + name;
    report(PosOf(p, {"languages.default", "languages"}),
           "languages.default: unknown language '" + p.default_language + "'",
           "write one of: " + known + ", or define it under languages:");
  } else if (Status s = CheckLanguageRunnable(p, *def); !s.ok()) {
    report(PosOf(p, {"languages.default", "commands.allow", "commands.deny", "commands"}),
           "the default language cannot run: " + s.error().message,
           "add " + def->command[0] + " to commands.allow, or set languages.default to a language it allows");
  }
  for (const auto& name : explicit_languages) {
    if (name == p.default_language) continue;  // reported above
    const Language* lang = p.FindLanguage(name);
    if (!lang) continue;
    if (Status s = CheckLanguageRunnable(p, *lang); !s.ok()) {
      std::string key = "languages." + name;
      report(PosOf(p, {key.c_str()}), s.error().message,
             "add " + lang->command[0] + " to commands.allow, or remove languages." + name);
    }
  }
  return out;
}

}  // namespace lsb
