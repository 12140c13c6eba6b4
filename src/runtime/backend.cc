#include "runtime/backend.h"

#include <algorithm>

namespace lsb {

protocol::BoxSetup PolicyBoxSetup(const Policy& policy) {
  protocol::BoxSetup s;
  s.read_only = policy.read_only;
  for (const auto& t : policy.tmpfs)
    s.tmpfs.push_back(protocol::TmpfsSpec{t.path, t.size_bytes, t.mode, t.noexec, t.nosuid, t.nodev});
  for (const auto& m : policy.mounts)
    s.mounts.push_back(protocol::MountSpec{m.source, m.target, m.mode, m.size_bytes, -1});
  s.network_enabled = policy.network_enabled;
  s.allow = policy.allow;
  s.deny = policy.deny;
  s.uid = policy.uid;
  s.gid = policy.gid;
  s.trace = policy.trace;
  // What build.files put into the image is the program's to read, wherever the target is (/opt...).
  for (const auto& f : policy.build.files) {
    std::string t = f.target;
    while (t.size() > 1 && t.back() == '/') t.pop_back();
    if (std::find(s.readable.begin(), s.readable.end(), t) == s.readable.end()) s.readable.push_back(t);
  }
  return s;
}

Result<std::string> Backend::BoxShape(const Policy& /*policy*/, const protocol::BoxSetup& /*setup*/) const {
  return Error{"the " + name() + " backend does not describe its boxes: none is handed out from a pool"};
}

std::vector<ControlSupport> Backend::RefusedControls(const Policy& policy) const {
  std::vector<ControlSupport> refused;
  for (const ControlRow& row : ControlRows(policy)) {
    Enforcement e = DescribeControl(row, policy);
    if (e.verdict != Verdict::kRefused) continue;
    auto same = std::find_if(refused.begin(), refused.end(), [&](const ControlSupport& c) { return c.how == e.how; });
    if (same != refused.end()) same->control += ", " + row.label;
    else refused.push_back(ControlSupport{row.label, false, std::move(e.how)});
  }
  return refused;
}

Result<EnvironmentBuild> Backend::BuildEnvironment(const Policy& policy, const BuildProgress& /*progress*/) {
  return Error{ErrorCode::kInvalidArgument, "policy '" + policy.name + "' has a container.build, which the " + name() +
                                                " backend does not build"};
}

std::string Backend::RefusalFix(const Policy& /*policy*/) const {
  return "fix what the backend names above, or choose another policy (GET /v1/policies lists the runnable ones)";
}

Result<std::string> Backend::ShapeFor(const Policy& policy) const {
  LSB_ASSIGN_OR_RETURN(protocol::BoxSetup setup, SetupFor(policy));
  return BoxShape(policy, setup);
}

}  // namespace lsb
