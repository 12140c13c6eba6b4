#include "init/command_path.h"

#include <sys/stat.h>

namespace lsb::init {

std::optional<std::string> FindOnPath(std::string_view name, std::string_view path_var) {
  if (name.empty() || name.find('/') != std::string_view::npos) return std::nullopt;
  size_t i = 0;
  while (i <= path_var.size()) {
    size_t j = path_var.find(':', i);
    if (j == std::string_view::npos) j = path_var.size();
    // An empty or relative entry would search the cwd: never.
    if (j > i && path_var[i] == '/') {
      std::string cand = std::string(path_var.substr(i, j - i)) + "/" + std::string(name);
      struct stat st;
      if (::stat(cand.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return cand;
    }
    i = j + 1;
  }
  return std::nullopt;
}

std::string ImagePath(const std::vector<std::string>& image_env) {
  for (const auto& kv : image_env)
    if (kv.compare(0, 5, "PATH=") == 0) return kv.substr(5);
  return {};
}

std::optional<std::string> LocateCommand(const std::string& path, std::string_view image_path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) return path;
  if (image_path.empty()) return std::nullopt;
  size_t slash = path.rfind('/');
  return FindOnPath(slash == std::string::npos ? path : path.substr(slash + 1), image_path);
}

}  // namespace lsb::init
