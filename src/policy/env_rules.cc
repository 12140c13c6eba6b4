#include "policy/env_rules.h"

#include <algorithm>
#include <iterator>

namespace lsb::env {
namespace {

// glibc's own list of variables it drops for set-uid programs (elf/dl-... unsecvars.h) other than
// LD_* and TMPDIR: each names a file or directory glibc loads code or parsed data from. TMPDIR is
// left: every writable mount is noexec, and tools need it.
constexpr std::string_view kLibcLoaders[] = {
    "GCONV_PATH",  "GETCONF_DIR", "GLIBC_TUNABLES",   "HOSTALIASES", "LOCALDOMAIN", "LOCPATH",
    "MALLOC_TRACE", "NIS_PATH",   "NLSPATH",          "RESOLV_HOST_CONF", "RES_OPTIONS", "TZDIR"};

// Interpreter and shell start-up hooks: each makes the interpreter load or run something before
// (or instead of) the program, or adds command-line options the policy's language command did not
// give. An operator may set them in a policy; a request may not.
constexpr std::string_view kStartupHooks[] = {
    "PYTHONPATH",      "PYTHONSTARTUP", "PYTHONHOME",        "PYTHONINSPECT",      "PYTHONUSERBASE",
    "PYTHONPLATLIBDIR", "PYTHONEXECUTABLE", "PYTHONBREAKPOINT", "PYTHONPYCACHEPREFIX", "BASH_ENV",
    "ENV",             "SHELLOPTS",     "BASHOPTS",          "PS4",                "PROMPT_COMMAND",
    "NODE_OPTIONS",    "NODE_PATH",     "NODE_REPL_EXTERNAL_MODULE", "PERL5OPT",   "PERL5LIB",
    "PERLLIB",         "PERL5DB",       "RUBYOPT",           "RUBYLIB",            "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",   "JDK_JAVA_OPTIONS", "CLASSPATH"};

// Set by init (PATH) or from the policy's workdir (HOME) unless the policy sets them.
constexpr std::string_view kReserved[] = {"PATH", "HOME"};

template <size_t N>
bool In(const std::string_view (&list)[N], std::string_view name) {
  return std::find(std::begin(list), std::end(list), name) != std::end(list);
}

bool ValidName(std::string_view n) {
  auto alpha = [](unsigned char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  if (n.empty() || !alpha(static_cast<unsigned char>(n[0]))) return false;
  return std::all_of(n.begin(), n.end(), [&](char c) { return alpha(static_cast<unsigned char>(c)) || (c >= '0' && c <= '9'); });
}

// A name as it may be shown in a message: printable, cut short.
std::string Shown(std::string_view n) {
  std::string out;
  for (char c : n.substr(0, 64)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (n.size() > 64) out += "...";
  return out;
}

Status Bounds(const std::map<std::string, std::string>& env) {
  const EnvLimits& l = kEnvLimits;
  if (env.size() > l.max_vars)
    return Error{ErrorCode::kResourceExhausted,
                 "env: " + std::to_string(env.size()) + " variables; the limit is " + std::to_string(l.max_vars) +
                     " (the policy's and the request's together)",
                 "env"};
  size_t total = 0;
  for (const auto& [k, v] : env) total += k.size() + v.size() + 2;
  if (total > l.max_total_bytes)
    return Error{ErrorCode::kResourceExhausted,
                 "env: " + std::to_string(total) + " bytes of names and values; the limit is " +
                     std::to_string(l.max_total_bytes) + " (the policy's and the request's together)",
                 "env"};
  return OkStatus();
}

}  // namespace

std::optional<Refusal> Refuse(std::string_view name, std::string_view value, Source source) {
  const EnvLimits& l = kEnvLimits;
  if (name.size() > l.max_name_bytes)
    return Refusal{"the name is " + std::to_string(name.size()) + " bytes; the limit is " + std::to_string(l.max_name_bytes),
                   "use a shorter name"};
  if (!ValidName(name))
    return Refusal{"not a valid variable name (no '=', NUL, spaces or other punctuation)",
                   "use letters, digits and '_', not starting with a digit"};
  if (value.find('\0') != std::string_view::npos)
    return Refusal{"the value holds a NUL byte, which would cut it short at exec",
                   "remove the NUL; pass binary data in a file instead"};
  if (value.size() > l.max_value_bytes)
    return Refusal{"the value is " + std::to_string(value.size()) + " bytes; the limit is " +
                       std::to_string(l.max_value_bytes),
                   "pass large data in a file or on stdin instead"};
  if (name.substr(0, 3) == "LD_")
    return Refusal{"refused: the dynamic loader's variables load code that commands.allow never approved",
                   "remove it"};
  if (In(kLibcLoaders, name))
    return Refusal{"refused: glibc loads code or data from where it points (it ignores it for set-uid programs too)",
                   "remove it"};
  if (source == Source::kRequest && In(kStartupHooks, name))
    return Refusal{"refused in a request: an interpreter start-up hook would load or run code before the program, "
                   "or undo the options of the policy's language command",
                   "put the code in the program itself, or ask the operator to set it in the policy"};
  return std::nullopt;
}

Status CheckRequestEnv(const std::map<std::string, std::string>& policy_env,
                       const std::map<std::string, std::string>& request_env) {
  std::map<std::string, std::string> merged = policy_env;
  for (const auto& [k, v] : request_env) {
    const std::string field = "env." + Shown(k);
    if (auto r = Refuse(k, v, Source::kRequest)) return Error::InvalidArgument(field, field + ": " + r->why + "; " + r->fix);
    if (policy_env.count(k))
      return Error::PermissionDenied(field, field + ": refused: the policy sets it, and a request may only tighten its "
                                                    "policy, not replace the operator's values; leave it out");
    if (In(kReserved, k))
      return Error::PermissionDenied(field, field + ": refused: init sets it (PATH to the system's bin dirs, HOME to "
                                                    "the workdir) and a request may not replace it; leave it out, or "
                                                    "ask the operator to set it in the policy");
    merged[k] = v;
  }
  return Bounds(merged);
}

Status CheckRunEnv(const std::map<std::string, std::string>& env) {
  for (const auto& [k, v] : env)
    if (auto r = Refuse(k, v, Source::kPolicy))
      return Error::InvalidArgument("env." + Shown(k), "env." + Shown(k) + ": " + r->why);
  return Bounds(env);
}

}  // namespace lsb::env
