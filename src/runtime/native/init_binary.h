// Finding llm-sandbox-init on the host. It is opened by fd in the parent and executed with
// execveat(fd, "", AT_EMPTY_PATH) in the child, so the child (already an unprivileged id in its
// user namespace) needs no search permission on the directories above it.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace lsb::native {

// $LLM_SANDBOX_INIT when set (then the only candidate); else, in order,
// <dir of /proc/self/exe>/llm-sandbox-init, /usr/local/libexec/llm-sandbox/llm-sandbox-init.
std::vector<std::string> InitCandidates();

struct InitBinary {
  std::string path;
  UniqueFd fd;  // O_PATH | O_CLOEXEC
};

// The first candidate that exists and is a regular file; an error listing what was tried and how
// to fix it otherwise. `explicit_path` (non-empty) is the only candidate.
Result<InitBinary> OpenInitBinary(const std::string& explicit_path = "");

}  // namespace lsb::native
