#include "policy/tighten.h"

#include <algorithm>
#include <string>

#include "policy/controls.h"
#include "policy/network_rules.h"
#include "policy/units.h"

namespace lsb {
namespace {

template <typename T>
Status Lower(Policy& p, const char* key, const std::optional<T>& asked, T& slot,
             std::string (*format)(T)) {
  if (!asked) return OkStatus();
  if (*asked <= 0) {
    return Error::InvalidArgument(key, std::string(key) + ": a request cannot set " + format(*asked) +
                                           "; give a positive value");
  }
  if (*asked > slot) {
    return Error::PermissionDenied(key, std::string(key) + ": a request may lower the policy's " + format(slot) +
                                            ", not raise it to " + format(*asked) + " (policy '" + p.name + "')");
  }
  slot = *asked;
  p.positions.erase(key);
  return OkStatus();
}

// A value no box can run with: the field is the policy key, and the message starts with it.
Error Bad(const char* key, const char* why) { return Error::InvalidArgument(key, std::string(key) + ": " + why); }

std::string Cpu(double v) { return units::FormatCpu(v) + " cores"; }
std::string Size(uint64_t v) { return units::FormatBytes(v); }
std::string Duration(uint64_t v) { return units::FormatDurationMs(v); }
std::string Count64(uint64_t v) { return std::to_string(v); }
std::string Count32(uint32_t v) { return std::to_string(v); }

}  // namespace

Status CheckRequestedLimits(const PolicyOverrides& o) {
  if (o.cpu && !(*o.cpu >= kMinCpu))  // also NaN
    return Error::InvalidArgument("resources.cpu", "resources.cpu: " + Cpu(*o.cpu) +
                                                       " is below the smallest quota a box can have, " +
                                                       Cpu(kMinCpu) + "; give at least 0.01 (or \"10m\")");
  if (o.memory_bytes && *o.memory_bytes < kMinMemoryBytes)
    return Error::InvalidArgument("resources.memory",
                                  "resources.memory: " + Size(*o.memory_bytes) + " is below the " +
                                      Size(kMinMemoryBytes) +
                                      " a box needs to start (init and the interpreter); give at least " +
                                      Size(kMinMemoryBytes));
  if (o.timeout_ms && *o.timeout_ms == 0) return Bad("resources.timeout", "must be positive");
  if (o.pids && *o.pids < 2) return Bad("resources.pids", "must be at least 2 (init counts as one)");
  if (o.output_bytes && *o.output_bytes == 0) return Bad("resources.output", "must be positive");
  if (o.open_files && *o.open_files < 3) return Bad("resources.open_files", "must be at least 3 (stdin, stdout, stderr)");
  if (o.file_size_bytes && *o.file_size_bytes == 0) return Bad("resources.file_size", "must be positive");
  return OkStatus();
}

// A request's network.allow: each entry parsed and covered by an entry of the policy's.
static Status NarrowAllowlist(Policy& p, const std::vector<std::string>& asked) {
  if (!p.network_enabled)
    return Error::PermissionDenied("network.allow", "network.allow: policy '" + p.name +
                                                        "' has no network; a request cannot give it an allowlist");
  std::vector<NetworkRule> policy_rules;
  for (const auto& text : p.network_allow)
    if (auto r = ParseNetworkRule(text); r.ok()) policy_rules.push_back(*r);
  std::vector<std::string> narrowed;
  for (const auto& text : asked) {
    auto rule = ParseNetworkRule(text);
    if (!rule.ok())
      return Error::InvalidArgument("network.allow", "network.allow: '" + text + "': " + rule.error().message);
    bool covered = std::any_of(policy_rules.begin(), policy_rules.end(),
                               [&](const NetworkRule& wide) { return RuleCovers(wide, *rule); });
    if (!covered)
      return Error::PermissionDenied("network.allow", "network.allow: '" + text + "' is not within policy '" + p.name +
                                                          "''s allowlist; a request may narrow it, never widen it");
    if (std::find(narrowed.begin(), narrowed.end(), rule->text) == narrowed.end()) narrowed.push_back(rule->text);
  }
  p.network_allow = std::move(narrowed);
  p.positions.erase("network.allow");
  return OkStatus();
}

// One case per control, so a control added to the table (policy/controls.h) without a word on
// whether a request may narrow it does not compile; the cases follow the table's Narrowing.
static Status Narrow(Policy& p, Control c, const PolicyOverrides& o) {
  const std::string key = KeyOf(c);
  switch (c) {
    case Control::kCpu: return Lower(p, key.c_str(), o.cpu, p.cpu, Cpu);
    case Control::kMemory: return Lower(p, key.c_str(), o.memory_bytes, p.memory_bytes, Size);
    case Control::kTimeout: return Lower(p, key.c_str(), o.timeout_ms, p.timeout_ms, Duration);
    case Control::kTimeoutGrace:
      if (o.timeout_grace_ms) {
        if (*o.timeout_grace_ms > p.timeout_grace_ms)
          return Error::PermissionDenied(key, key + ": a request may lower the policy's " +
                                                  Duration(p.timeout_grace_ms) + ", not raise it to " +
                                                  Duration(*o.timeout_grace_ms) + " (policy '" + p.name + "')");
        p.timeout_grace_ms = *o.timeout_grace_ms;
        p.positions.erase(key);
      }
      // A lowered timeout lowers the grace with it: the grace is never longer than the timeout.
      p.timeout_grace_ms = std::min(p.timeout_grace_ms, p.timeout_ms);
      return OkStatus();
    case Control::kPids: return Lower(p, key.c_str(), o.pids, p.pids, Count32);
    case Control::kOutput: return Lower(p, key.c_str(), o.output_bytes, p.output_bytes, Size);
    case Control::kOpenFiles: return Lower(p, key.c_str(), o.open_files, p.open_files, Count64);
    case Control::kFileSize: return Lower(p, key.c_str(), o.file_size_bytes, p.file_size_bytes, Size);
    case Control::kNetworkEnabled:
      if (!o.network_enabled) return OkStatus();
      if (*o.network_enabled && !p.network_enabled)
        return Error::PermissionDenied(key, key + ": policy '" + p.name + "' has no network; a request cannot turn it on");
      if (p.network_enabled != *o.network_enabled) p.positions.erase(key);
      p.network_enabled = *o.network_enabled;
      return OkStatus();
    case Control::kNetworkAllow: return o.network_allow ? NarrowAllowlist(p, *o.network_allow) : OkStatus();
    // Narrowing::kNo: a request has no field for these.
    case Control::kImage: case Control::kPull: case Control::kBuild: case Control::kReadOnly: case Control::kTmpfs:
    case Control::kMounts: case Control::kUserNamespace: case Control::kUser: case Control::kPrivileges:
    case Control::kSeccomp: case Control::kNetworkDeny: case Control::kNetworkSecrets: case Control::kCommandsAllow:
    case Control::kCommandsDeny: case Control::kLanguages: case Control::kEnv: case Control::kWorkdir:
    case Control::kTrace: case Control::kAlerts: case Control::kSessionSetup: case Control::kBackend:
    case Control::kRuntime: case Control::kGvisorAcceptWeaker:
      return OkStatus();
  }
  return OkStatus();
}

Result<Policy> TightenPolicy(const Policy& policy, const PolicyOverrides& o) {
  LSB_TRY(CheckRequestedLimits(o));
  Policy p = policy;
  for (const ControlInfo& c : AllControls()) LSB_TRY(Narrow(p, c.id, o));
  return p;
}

}  // namespace lsb
