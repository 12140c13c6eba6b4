// The engine-level seccomp profile of every sandbox container (runc): an allowlist, so a system
// call unknown when this was built is refused by the engine, holding every call libseccomp knows
// for this architecture EXCEPT the ones llm-sandbox-init refuses silently. The escape calls init
// watches are let through to init's filter on purpose: the engine's EPERM would outrank init's
// user notification and the escape_syscall alert would never be raised (docs/docker.md).
#pragma once

#include <string>

#include "base/result.h"

namespace lsb::docker {

// The profile as the JSON text the engine takes in SecurityOpt "seccomp=<json>". Built once.
Result<std::string> EngineSeccompProfile();

// Writes `profile` to a content-addressed file for engines that take a path (Podman's compat API):
// /run/llm-sandbox when root, else $XDG_RUNTIME_DIR/llm-sandbox (or /tmp/llm-sandbox-<uid>).
// Written once (temp file + rename); later calls find it. Returns the path.
Result<std::string> WriteProfileFile(const std::string& profile);

}  // namespace lsb::docker
