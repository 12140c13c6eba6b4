#include "base/state_dir.h"

#include <unistd.h>

#include <cstdlib>

namespace lsb {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

std::string DefaultStateDir() {
  if (std::string d = Env("LLM_SANDBOX_STATE_DIR"); !d.empty()) return d;
  if (::geteuid() == 0) return "/var/lib/llm-sandbox";
  if (std::string d = Env("XDG_STATE_HOME"); !d.empty() && d[0] == '/') return d + "/llm-sandbox";
  if (std::string h = Env("HOME"); !h.empty()) return h + "/.local/state/llm-sandbox";
  return "";
}

}  // namespace lsb
