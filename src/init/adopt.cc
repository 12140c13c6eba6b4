#include "init/adopt.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/fd_passing.h"
#include "base/io.h"
#include "init/adopt_wire.h"

namespace lsb::init {
namespace {

// /proc/<pid>/cmdline and environ: NUL-terminated strings.
std::vector<std::string> NulSeparated(const std::string& text) {
  std::vector<std::string> out;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\0', at);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

std::string RealPath(const std::string& path) {
  char buf[4096];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : std::string();
}

}  // namespace

std::string WhyNotAdoptable(const SpawnParams& p, pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid) + "/";
  auto cmdline = ReadFile(proc + "cmdline");
  if (!cmdline.ok()) return "its command line cannot be read";
  // Its own: python [options] -c SOURCE [prelude]; the run's: python [options] -c SOURCE args...
  const std::vector<std::string> own = NulSeparated(*cmdline);
  auto own_c = std::find(own.begin(), own.end(), "-c");
  auto run_c = std::find(p.argv.begin(), p.argv.end(), "-c");
  if (p.argv.empty() || run_c == p.argv.end() || run_c + 1 == p.argv.end())
    return "the run is not `python [options] -c SOURCE ...`";
  if (own.empty() || !std::equal(own.begin() + 1, own_c, p.argv.begin() + 1, run_c))
    return "the run's interpreter options differ from its own";
  char exe[4096];
  ssize_t n = ::readlink((proc + "exe").c_str(), exe, sizeof exe - 1);
  if (n <= 0) return "its executable cannot be read";
  exe[n] = '\0';
  if (RealPath(p.path) != exe) return "the run's " + p.path + " is not its " + exe;
  auto environ = ReadFile(proc + "environ");
  if (!environ.ok()) return "its environment cannot be read";
  std::vector<std::string> started = NulSeparated(*environ);
  std::vector<std::string> wanted = p.env;
  std::sort(started.begin(), started.end());
  std::sort(wanted.begin(), wanted.end());
  if (started == wanted) return "";
  for (const auto& w : wanted)
    if (!std::binary_search(started.begin(), started.end(), w)) return "the run's environment differs (" + w.substr(0, w.find('=')) + ")";
  return "the run's environment lacks a variable it started with";
}

Result<Spawned> Adopt(Adoptee adoptee, const SpawnParams& p) {
  const int sock = adoptee.sock.get();
  // The run first (the python side reads it before it is confined), then the confinement.
  const std::string run = nlohmann::json{{"argv", p.argv}, {"env", p.env}}.dump();
  if (::send(sock, run.data(), run.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(run.size()))
    return Error::FromErrno("hand the run to the fork server's program");

  LSB_ASSIGN_OR_RETURN(StdioPipes pipes, MakeStdioPipes(p.stdin_pipe));
  AdoptWire w;
  w.has_stdin = p.stdin_pipe ? 1 : 0;
  w.has_ruleset = p.ruleset_fd >= 0 ? 1 : 0;
  w.uid = p.uid;
  w.gid = p.gid;
  w.nofile = p.nofile;
  w.file_size = p.file_size;
  if (p.workdir.size() >= sizeof w.workdir) return Error{"workdir is too long for the fork server: " + p.workdir};
  std::memcpy(w.workdir, p.workdir.data(), p.workdir.size());
  std::vector<sock_filter> filters;
  if (p.watch) {
    filters.insert(filters.end(), p.seccomp->watch.begin(), p.seccomp->watch.end());
    w.watch_len = static_cast<uint32_t>(p.seccomp->watch.size());
  }
  if (p.escape) {
    filters.insert(filters.end(), p.seccomp->escape.begin(), p.seccomp->escape.end());
    w.escape_len = static_cast<uint32_t>(p.seccomp->escape.size());
  }
  if (w.watch_len > kAdoptMaxFilter || w.escape_len > kAdoptMaxFilter) return Error{"a seccomp program is too long to hand over"};
  std::string msg(reinterpret_cast<const char*>(&w), sizeof w);
  msg.append(reinterpret_cast<const char*>(filters.data()), filters.size() * sizeof(sock_filter));
  std::vector<int> fds;
  if (p.stdin_pipe) fds.push_back(pipes.in.first.get());
  fds.push_back(pipes.out.second.get());
  fds.push_back(pipes.err.second.get());
  if (p.ruleset_fd >= 0) fds.push_back(p.ruleset_fd);
  if (SendWithFds(sock, msg.data(), msg.size(), fds.data(), fds.size()) != static_cast<ssize_t>(msg.size()))
    return Error::FromErrno("hand the confinement to the fork server's program");

  Spawned s = pipes.HostSide(adoptee.pid);
  s.control = std::move(adoptee.sock);  // EOF once the program closed its end: it runs
  LSB_TRY(TakeListener(s, p.watch, "the fork server's program", p.workdir));
  return s;
}

}  // namespace lsb::init
