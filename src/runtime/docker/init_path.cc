#include "runtime/docker/init_path.h"

#include <elf.h>
#include <limits.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

namespace lsb::docker {

Result<bool> IsStaticElf(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Error::FromErrno("open " + path);
  Elf64_Ehdr eh{};
  if (!f.read(reinterpret_cast<char*>(&eh), sizeof(eh)) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64)
    return Error{path + " is not a 64-bit ELF executable"};
  for (int i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph{};
    f.seekg(static_cast<std::streamoff>(eh.e_phoff + static_cast<uint64_t>(i) * eh.e_phentsize));
    if (!f.read(reinterpret_cast<char*>(&ph), sizeof(ph))) return Error{path + ": truncated ELF program headers"};
    if (ph.p_type == PT_INTERP) return false;
  }
  return true;
}

Result<std::string> FindStaticInit(const std::string& explicit_path) {
  std::vector<std::string> candidates;
  if (!explicit_path.empty()) {
    candidates.push_back(explicit_path);
  } else {
    if (const char* env = std::getenv("LLM_SANDBOX_INIT"); env && *env) candidates.emplace_back(env);
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
      std::string dir(self, static_cast<size_t>(n));
      dir = dir.substr(0, dir.rfind('/'));
      candidates.push_back(dir + "/llm-sandbox-init");
    }
    candidates.emplace_back("/usr/local/libexec/llm-sandbox/llm-sandbox-init");
  }
  std::string tried;
  for (const auto& c : candidates) {
    char real[PATH_MAX];
    if (!realpath(c.c_str(), real) || access(real, R_OK | X_OK) != 0) {
      tried += (tried.empty() ? "" : ", ") + c;
      continue;
    }
    auto st = IsStaticElf(real);
    if (!st.ok()) return st.error();
    if (!*st)
      return Error{std::string(real) + " is dynamically linked; the Docker backend bind-mounts it into images "
                   "that may lack its libraries: build it static (the CMake target llm-sandbox-init is)"};
    return std::string(real);
  }
  return Error{"llm-sandbox-init not found (tried " + tried +
               "); build it (cmake --build build --target llm-sandbox-init) or set LLM_SANDBOX_INIT"};
}

}  // namespace lsb::docker
