#include "runtime/native/init_binary.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

namespace lsb::native {

std::vector<std::string> InitCandidates() {
  std::vector<std::string> out;
  // An explicit setting is the only candidate: a wrong one must not fall back to another binary.
  if (const char* env = std::getenv("LLM_SANDBOX_INIT"); env && *env) return {env};
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) {
    std::string exe(buf, static_cast<size_t>(n));
    auto slash = exe.rfind('/');
    if (slash != std::string::npos) out.push_back(exe.substr(0, slash) + "/llm-sandbox-init");
  }
  out.emplace_back("/usr/local/libexec/llm-sandbox/llm-sandbox-init");
  return out;
}

Result<InitBinary> OpenInitBinary(const std::string& explicit_path) {
  std::vector<std::string> candidates =
      explicit_path.empty() ? InitCandidates() : std::vector<std::string>{explicit_path};
  std::string tried;
  for (const auto& path : candidates) {
    UniqueFd fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
    std::string why;
    if (!fd) {
      why = std::strerror(errno);
    } else {
      struct stat st {};
      if (::fstat(fd.get(), &st) != 0)
        why = std::strerror(errno);
      else if (!S_ISREG(st.st_mode))
        why = "not a regular file";
      else if ((st.st_mode & 0111) == 0)
        why = "not executable";
      else
        return InitBinary{path, std::move(fd)};
    }
    tried += "\n  " + path + ": " + why;
  }
  return Error{"cannot find llm-sandbox-init; tried:" + tried +
               "\nfix: build it (make llm-sandbox-init), install it to "
               "/usr/local/libexec/llm-sandbox/, or set LLM_SANDBOX_INIT=/path/to/llm-sandbox-init"};
}

}  // namespace lsb::native
