// llm-sandbox-build-step: PID 1 of a build box (src/runtime/native/build_box.h). Started by the
// native launcher in fresh user, pid, mount, net, ipc and uts namespaces as uid 0 of its user
// namespace, it reads one line of JSON from fd 0 (the host's request), then
//   1. mounts the image's layers (read-only lowers) under the step's writable upper directory
//      (overlayfs, userxattr), a fresh /proc, a minimal /dev and a /tmp tmpfs, and pivots into it;
//   2. runs the step's argv with stdin /dev/null and stdout/stderr on fd 1 (the host reads them),
//      confined first (step_confine.h: capabilities cut to what dpkg/apt/pip need, no_new_privs,
//      init's escape seccomp filter; a step that cannot be confined does not run);
//   3. when it ends, kills whatever it left running (SIGKILL to every process of this pid namespace,
//      of which this is PID 1) and exits with its status (128+signal when killed).
// Diagnostics of its own go to fd 2. The host bounds time and output and turns the upper
// directory into a layer; nothing here trusts what the step wrote.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "build/step_confine.h"

namespace {

[[noreturn]] void Die(const std::string& what) {
  std::string line = "llm-sandbox-build-step: " + what + (errno ? std::string(": ") + std::strerror(errno) : "") + "\n";
  (void)!::write(2, line.data(), line.size());
  ::_exit(125);
}

std::string ReadRequest() {
  std::string line;
  char c;
  while (line.size() < (1u << 20)) {
    ssize_t n = ::read(0, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) Die("read the request");
    if (c == '\n') return line;
    line.push_back(c);
  }
  errno = E2BIG;
  Die("read the request");
}

void MountOrDie(const char* src, const std::string& target, const char* type, unsigned long flags, const std::string& data) {
  if (::mount(src, target.c_str(), type, flags, data.empty() ? nullptr : data.c_str()) != 0)
    Die(std::string("mount ") + (type ? type : "bind") + " on " + target);
}

// /dev of the build: a tmpfs with the harmless host devices bound in (mknod is not allowed here).
void MakeDev(const std::string& root) {
  const std::string dev = root + "/dev";
  MountOrDie("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=1m");
  for (const char* name : {"null", "zero", "full", "random", "urandom", "tty"}) {
    std::string target = dev + "/" + name;
    int fd = ::open(target.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) Die("create " + target);
    ::close(fd);
    MountOrDie((std::string("/dev/") + name).c_str(), target, nullptr, MS_BIND, "");
  }
  ::symlink("/proc/self/fd", (dev + "/fd").c_str());
  ::symlink("/proc/self/fd/0", (dev + "/stdin").c_str());
  ::symlink("/proc/self/fd/1", (dev + "/stdout").c_str());
  ::symlink("/proc/self/fd/2", (dev + "/stderr").c_str());
  ::mkdir((dev + "/shm").c_str(), 01777);
  MountOrDie("tmpfs", dev + "/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=64m");
}

int Run(const nlohmann::json& req) {
  const std::string root = req.at("merged");
  std::vector<int> lower_fds;
  for (const auto& l : req.at("lowers")) {
    int fd = ::open(l.get<std::string>().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) Die("open layer " + l.get<std::string>());
    lower_fds.push_back(fd);
  }
  std::string lower;
  for (auto it = lower_fds.rbegin(); it != lower_fds.rend(); ++it)
    lower += (lower.empty() ? "" : ":") + std::string("/proc/self/fd/") + std::to_string(*it);
  if (::mount("", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) Die("make the mounts private");
  const std::string opts = "lowerdir=" + lower + ",upperdir=" + req.at("upper").get<std::string>() +
                           ",workdir=" + req.at("work").get<std::string>() + ",userxattr";
  MountOrDie("overlay", root, "overlay", MS_NOSUID | MS_NODEV, opts);
  for (int fd : lower_fds) ::close(fd);
  for (const char* d : {"/proc", "/dev", "/tmp"}) ::mkdir((root + d).c_str(), 0755);  // an image without them
  MountOrDie("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "");
  MakeDev(root);
  MountOrDie("tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=" + req.at("tmp_size").get<std::string>());
  if (::chdir(root.c_str()) != 0) Die("chdir to the new root");
  if (::syscall(SYS_pivot_root, ".", ".") != 0) Die("pivot_root");
  if (::umount2(".", MNT_DETACH) != 0) Die("detach the host's root");
  if (::chdir("/") != 0) Die("chdir /");

  std::vector<std::string> argv = req.at("argv"), env = req.at("env");
  const std::string workdir = req.value("workdir", "/");
  std::vector<sock_filter> filter;
  if (std::string why = lsb::build::CompileStepFilter(&filter); !why.empty()) {
    errno = 0;
    Die("compile the step's seccomp filter (" + why + ")");
  }
  pid_t child = ::fork();
  if (child < 0) Die("fork");
  if (child == 0) {
    ::setsid();
    int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0 || ::dup2(null, 0) < 0 || ::dup2(1, 2) < 0) Die("set up the step's stdio");
    if (::chdir(workdir.c_str()) != 0) Die("chdir to " + workdir);
    if (std::string why = lsb::build::ConfineStep(filter); !why.empty()) {
      errno = 0;
      Die("confine the step (" + why + ")");
    }
    std::vector<char*> a, e;
    for (auto& s : argv) a.push_back(s.data());
    a.push_back(nullptr);
    for (auto& s : env) {
      e.push_back(s.data());
      if (s.rfind("PATH=", 0) == 0) ::setenv("PATH", s.c_str() + 5, 1);  // execvpe searches our own PATH
    }
    e.push_back(nullptr);
    ::execvpe(a[0], a.data(), e.data());
    std::string line = std::string("llm-sandbox-build-step: cannot run ") + a[0] + ": " + std::strerror(errno) + "\n";
    (void)!::write(1, line.data(), line.size());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  // Whatever the step left running dies with it. We are PID 1 of this box's own pid namespace
  // (checked), so -1 reaches its processes only.
  if (::getpid() == 1) ::kill(-1, SIGKILL);
  while (::waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace

int main() {
  ::signal(SIGPIPE, SIG_IGN);
  nlohmann::json req;
  try {
    req = nlohmann::json::parse(ReadRequest());
    return Run(req);
  } catch (const std::exception& e) {
    std::string line = std::string("llm-sandbox-build-step: bad request: ") + e.what() + "\n";
    (void)!::write(2, line.data(), line.size());
    return 125;
  }
}
