// The static llm-sandbox-init on the engine's host, bind-mounted read-only into every container.
// It must be static: it runs inside any image, whatever libc that image has (or none).
#pragma once

#include <string>

#include "base/result.h"

namespace lsb::docker {

// `explicit_path`, else $LLM_SANDBOX_INIT, <dir of /proc/self/exe>/llm-sandbox-init,
// /usr/local/libexec/llm-sandbox/llm-sandbox-init. An absolute path to a static ELF, or an error
// that lists what was tried.
Result<std::string> FindStaticInit(const std::string& explicit_path = "");

// True when the ELF file has no program interpreter (PT_INTERP): it needs no loader in the image.
Result<bool> IsStaticElf(const std::string& path);

}  // namespace lsb::docker
