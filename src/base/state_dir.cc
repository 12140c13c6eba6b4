#include "base/state_dir.h"

#include <sys/stat.h>
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

Status KeepStateDirSearchable(const std::string& dir) {
  if (dir.empty()) return OkStatus();
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return OkStatus();
  if ((st.st_mode & S_IXOTH) != 0 || st.st_uid != ::geteuid()) return OkStatus();
  if (::chmod(dir.c_str(), (st.st_mode & 07777) | S_IXOTH) != 0)
    return Error::FromErrno("make the state directory " + dir +
                            " searchable by the boxes' unprivileged uids (chmod o+x); do it by hand or set "
                            "LLM_SANDBOX_STATE_DIR to a directory others may search");
  return OkStatus();
}

}  // namespace lsb
