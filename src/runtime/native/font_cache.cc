#include "runtime/native/font_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "base/io.h"
#include "base/unique_fd.h"
#include "image/safe_fs.h"

namespace lsb::native {
namespace {

constexpr off_t kMaxFontList = 4 << 20;  // as init's bound (init/font_cache.h)
constexpr uid_t kNobody = 65534;

// The child: nobody (when root), the temp dir as cwd, no stdio, an environment of our own.
[[noreturn]] void ExecBuilder(const std::string& dir, char* const argv[], char* const envp[]) {
  if (::geteuid() == 0 && (::setgroups(0, nullptr) != 0 || ::setgid(kNobody) != 0 || ::setuid(kNobody) != 0))
    ::_exit(126);
  int null = ::open("/dev/null", O_RDWR);
  if (null < 0 || ::chdir(dir.c_str()) != 0) ::_exit(126);
  for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
  ::execve(argv[0], argv, envp);
  ::_exit(127);
}

// Waits for `pid` at most `timeout_s`; kills it past that. Its exit status, or an error.
Result<int> WaitBuilder(pid_t pid, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    int status = 0;
    pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (got < 0 && errno != EINTR) return Error::FromErrno("font cache: wait for python");
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return Error{ErrorCode::kTimeout, "font cache: python did not build matplotlib's font list in " +
                                            std::to_string(timeout_s) + " s"};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// The one fontlist-v<N>.json in `dir` (every entry is removed, then the dir).
Result<FontCache> TakeFontList(const std::string& dir) {
  FontCache out;
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d))
      if (std::string n = e->d_name; n != "." && n != "..") names.push_back(n);
    ::closedir(d);
  }
  Status status = OkStatus();
  for (const auto& n : names) {
    const std::string path = dir + "/" + n;
    struct stat st;
    if (n.rfind("fontlist-v", 0) == 0 && ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      if (st.st_size > kMaxFontList) {
        status = Error{ErrorCode::kResourceExhausted, "font cache: " + n + " is over 4 MiB"};
      } else if (auto text = ReadFile(path); text.ok()) {
        out = FontCache{n, std::move(*text)};
      }
    }
  }
  // Whatever else the build left (fontconfig's user cache under HOME) goes with the dir.
  if (UniqueFd tmp(::open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC)); tmp)
    (void)image::RemoveTree(tmp.get(), dir.substr(5));
  if (!status.ok()) return status.error();
  return out;
}

}  // namespace

Result<FontCache> BuildFontCache(const std::string& python, int timeout_s) {
  if (::access(python.c_str(), X_OK) != 0) return FontCache{};
  char tmpl[] = "/tmp/lsb-fontcache-XXXXXX";
  if (!::mkdtemp(tmpl)) return Error::FromErrno("font cache: make a temp dir");
  const std::string dir = tmpl;
  if (::geteuid() == 0 && ::chown(dir.c_str(), kNobody, kNobody) != 0) {
    ::rmdir(dir.c_str());
    return Error::FromErrno("font cache: chown " + dir + " to nobody");
  }
  // Exit 3 without matplotlib (not an error); importing font_manager writes the list.
  const std::string code =
      "import importlib.util, sys\n"
      "if importlib.util.find_spec('matplotlib') is None: sys.exit(3)\n"
      "import matplotlib.font_manager\n";
  std::vector<std::string> args = {python, "-I", "-c", code};
  std::vector<std::string> env = {"PATH=/usr/bin:/bin", "HOME=" + dir, "MPLCONFIGDIR=" + dir, "LANG=C.UTF-8"};
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  for (auto& e : env) envp.push_back(e.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) return Error::FromErrno("font cache: fork");
  if (pid == 0) ExecBuilder(dir, argv.data(), envp.data());
  auto code_or = WaitBuilder(pid, timeout_s);
  auto list = TakeFontList(dir);
  if (!code_or.ok()) return code_or.error();
  if (*code_or == 3) return FontCache{};
  if (*code_or != 0)
    return Error{"font cache: " + python + " exited with " + std::to_string(*code_or) +
                 " importing matplotlib.font_manager; boxes build the font list themselves"};
  if (!list.ok()) return list.error();
  if (list->name.empty()) return Error{"font cache: matplotlib wrote no fontlist-v*.json in " + dir};
  return list;
}

void HostFontCache::Start() {
  std::call_once(started_, [this] {
    built_ = std::async(std::launch::async, [] {
               auto built = BuildFontCache("/usr/bin/python3");
               if (built.ok()) return *built;
               std::fprintf(stderr, "llm-sandbox: %s\n", built.error().message.c_str());
               return FontCache{};
             }).share();
  });
}

const FontCache& HostFontCache::Get() {
  Start();
  return built_.get();
}

bool AllowsPython(const std::vector<std::string>& allow) {
  for (const auto& a : allow) {
    size_t slash = a.rfind('/');
    if (a.compare(slash == std::string::npos ? 0 : slash + 1, 6, "python") == 0) return true;
  }
  return false;
}

}  // namespace lsb::native
