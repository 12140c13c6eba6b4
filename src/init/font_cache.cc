#include "init/font_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/io.h"
#include "base/unique_fd.h"

namespace lsb::init {
namespace {

constexpr size_t kMaxFontCache = 4u << 20;

bool ValidName(const std::string& n) {
  const std::string head = "fontlist-v", tail = ".json";
  if (n.size() <= head.size() + tail.size() || n.compare(0, head.size(), head) != 0 ||
      n.compare(n.size() - tail.size(), tail.size(), tail) != 0)
    return false;
  for (size_t i = head.size(); i < n.size() - tail.size(); ++i)
    if (n[i] < '0' || n[i] > '9') return false;
  return true;
}

}  // namespace

Status PlaceFontCache(const protocol::BoxSetup& setup, const std::string& job_dir_path) {
  if (setup.font_cache.empty()) return OkStatus();
  if (!ValidName(setup.font_cache_name))
    return Error{ErrorCode::kInvalidArgument, "font cache: \"" + setup.font_cache_name +
                                                  "\" is not a matplotlib font list name (fontlist-v<N>.json)"};
  if (setup.font_cache.size() > kMaxFontCache)
    return Error{ErrorCode::kInvalidArgument, "font cache: " + std::to_string(setup.font_cache.size()) +
                                                  " bytes, over the 4 MiB a font list may have"};
  const std::string dir = job_dir_path + "/" + kFontCacheDirName;
  if (::mkdir(dir.c_str(), 0755) != 0) return Error::FromErrno("font cache: mkdir " + dir);
  // 1777 as /tmp: matplotlib's os.access(W_OK) passes, and the sticky bit keeps the program (never
  // uid 0, and Landlock gives it only reads under the job dir) from replacing init's file.
  if (::chmod(dir.c_str(), 01777) != 0) return Error::FromErrno("font cache: chmod " + dir);
  const std::string path = dir + "/" + setup.font_cache_name;
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444));
  if (!fd) return Error::FromErrno("font cache: create " + path);
  return WriteAll(fd.get(), setup.font_cache);
}

void AddFontCacheEnv(std::map<std::string, std::string>& env, const protocol::BoxSetup& setup) {
  if (setup.font_cache.empty()) return;
  env.emplace("MPLCONFIGDIR", setup.job_dir + "/" + kFontCacheDirName);
}

}  // namespace lsb::init
