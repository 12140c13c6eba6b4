#include "build/step_confine.h"

#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "init/seccomp_compile.h"
#include "init/seccomp_filter.h"

namespace lsb::build {
namespace {

bool Kept(int cap) {
  for (int k : kBuildStepCapabilities)
    if (k == cap) return true;
  return false;
}

std::string Why(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// The bounding set first (it needs CAP_SETPCAP, dropped with the rest right after): uid 0's
// capabilities after exec are the bounding set's.
std::string DropCapabilities() {
  for (int cap = 0; cap <= 63; ++cap) {
    if (Kept(cap)) continue;
    // EINVAL: past the kernel's last capability.
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) return Why("drop a capability from the bounding set");
  }
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
    return Why("clear the ambient capabilities");
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  for (int cap : kBuildStepCapabilities) {
    data[cap / 32].effective |= 1u << (cap % 32);
    data[cap / 32].permitted |= 1u << (cap % 32);
    data[cap / 32].inheritable |= 1u << (cap % 32);
  }
  if (::syscall(SYS_capset, &header, data) != 0) return Why("set the step's capabilities");
  return "";
}

}  // namespace

std::string CompileStepFilter(std::vector<sock_filter>* out) {
  // The handoff fd only matters to the watch program, which a step does not get.
  auto programs = init::CompileSeccompPrograms(-1, init::SeccompOptions{.trace_opens = false, .watched = false});
  if (!programs.ok()) return programs.error().message;
  *out = std::move(programs->escape);
  return out->empty() ? "an empty seccomp program" : "";
}

std::string ConfineStep(const std::vector<sock_filter>& filter) {
  if (std::string why = DropCapabilities(); !why.empty()) return why;
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return Why("set no_new_privs");
  if (init::LoadSeccompProgram(filter, /*new_listener=*/false) < 0) return Why("load the step's seccomp filter");
  return "";
}

}  // namespace lsb::build
