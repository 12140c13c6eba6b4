// The one set of rules for a program's environment, whatever its source (docs/policy.md "env",
// docs/security.md "Class 8"): the policy file (container.env), an execute request, a batch task,
// a session's execute, the MCP tools and the CLI all reach the box through BuildRunSpec, which
// applies CheckRequestEnv; init applies CheckRunEnv again to what it is about to pass (defence in
// depth: a host path that forgot the check still cannot hand the program LD_PRELOAD).
//
// Three kinds of refusal:
//   - everywhere (policy too): the dynamic loader's LD_* and glibc's variables that load code or
//     data files chosen by the variable (GLIBC_TUNABLES, GCONV_PATH, ...): they change what code
//     an allowed binary runs before any of its own, which commands.allow never approved;
//   - requests only: interpreter and shell start-up hooks (PYTHONPATH, PYTHONSTARTUP, BASH_ENV,
//     NODE_OPTIONS, ...), which the operator may set in a policy but which would let a request
//     undo the options the policy's language command gives (`python3 -I -S`);
//   - requests only: a variable the policy sets, or PATH and HOME, which init sets: a request may
//     only tighten its policy, and replacing the operator's values is not tightening.
// Names are [A-Za-z_][A-Za-z0-9_]*; values hold no NUL; counts and sizes are bounded (kEnvLimits).
// Pure, no dependency beyond the standard library: init compiles it too.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace lsb::env {

struct EnvLimits {
  size_t max_vars = 128;             // variables in the program's whole environment
  size_t max_name_bytes = 128;
  size_t max_value_bytes = 32 << 10;  // one value (the kernel's own cap per string is 128 KiB)
  size_t max_total_bytes = 256 << 10; // names + values of the whole environment
};
inline constexpr EnvLimits kEnvLimits{};

enum class Source { kPolicy, kRequest };

struct Refusal {
  std::string why;  // "the dynamic loader's variables load code that commands.allow never approved"
  std::string fix;  // what to do instead
};

// Why `name` = `value` may not come from `source`; nullopt when it may. Checks the name's syntax
// and length, the value's NUL bytes and length, and the refused names of that source (not the
// policy override rule, which needs the policy: CheckRequestEnv).
std::optional<Refusal> Refuse(std::string_view name, std::string_view value, Source source);

// A request's variables on top of `policy_env`: each one Refuse(..., kRequest), none replacing a
// variable of the policy or PATH/HOME, the merged environment within the bounds. The error names
// the variable: "env.LD_PRELOAD: refused: ...".
Status CheckRequestEnv(const std::map<std::string, std::string>& policy_env,
                       const std::map<std::string, std::string>& request_env);

// The environment init is about to give the program, source unknown: syntax, the names refused
// everywhere, the bounds.
Status CheckRunEnv(const std::map<std::string, std::string>& env);

}  // namespace lsb::env
