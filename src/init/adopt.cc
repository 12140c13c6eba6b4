#include "init/adopt.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/fd_passing.h"
#include "base/io.h"
#include "init/adopt_wire.h"

namespace lsb::init {
namespace {

Result<std::pair<UniqueFd, UniqueFd>> Pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Error::FromErrno("pipe");
  return std::make_pair(UniqueFd(fds[0]), UniqueFd(fds[1]));
}

std::string RealPath(const std::string& path) {
  char buf[4096];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : std::string();
}

}  // namespace

std::string WhyNotAdoptable(const SpawnParams& p, pid_t pid) {
  // The interpreter's flags (its argv up to -c) are the run's.
  auto cmdline = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
  if (!cmdline.ok()) return "its command line cannot be read";
  size_t c = 1;
  for (size_t at = cmdline->find('\0') + 1; at < cmdline->size() && c < p.argv.size(); ++c) {
    size_t end = cmdline->find('\0', at);
    if (end == std::string::npos) end = cmdline->size();
    std::string arg = cmdline->substr(at, end - at);
    if (arg != p.argv[c]) return "the run's interpreter options differ from its own";
    if (arg == "-c") break;
    at = end + 1;
  }
  if (c + 1 >= p.argv.size() || p.argv[c] != "-c") return "the run is not `python [options] -c SOURCE ...`";
  char exe[4096];
  ssize_t n = ::readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), exe, sizeof exe - 1);
  if (n <= 0) return "its executable cannot be read";
  exe[n] = '\0';
  if (RealPath(p.path) != exe) return "the run's " + p.path + " is not its " + exe;
  auto environ = ReadFile("/proc/" + std::to_string(pid) + "/environ");
  if (!environ.ok()) return "its environment cannot be read";
  std::vector<std::string> started;
  for (size_t at = 0; at < environ->size();) {
    size_t end = environ->find('\0', at);
    if (end == std::string::npos) end = environ->size();
    started.push_back(environ->substr(at, end - at));
    at = end + 1;
  }
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

  LSB_ASSIGN_OR_RETURN(auto out, Pipe());
  LSB_ASSIGN_OR_RETURN(auto err, Pipe());
  std::pair<UniqueFd, UniqueFd> in;
  if (p.stdin_pipe) {
    LSB_ASSIGN_OR_RETURN(in, Pipe());
  }
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
  if (p.stdin_pipe) fds.push_back(in.first.get());
  fds.push_back(out.second.get());
  fds.push_back(err.second.get());
  if (p.ruleset_fd >= 0) fds.push_back(p.ruleset_fd);
  if (SendWithFds(sock, msg.data(), msg.size(), fds.data(), fds.size()) != static_cast<ssize_t>(msg.size()))
    return Error::FromErrno("hand the confinement to the fork server's program");
  out.second.reset();
  err.second.reset();
  in.first.reset();

  Spawned s;
  s.pid = adoptee.pid;
  s.stdout_r = std::move(out.first);
  s.stderr_r = std::move(err.first);
  s.stdin_w = std::move(in.second);
  ChildReport m{};
  int got_fds[kMaxPassedFds];
  size_t nfds = 0;
  ssize_t n = RecvWithFds(sock, &m, sizeof m, got_fds, &nfds);
  std::vector<UniqueFd> got;
  for (size_t i = 0; i < nfds; ++i) got.emplace_back(got_fds[i]);
  if (n > 0 && m.tag == 'L' && (!got.empty() || !p.watch)) {
    if (!got.empty()) s.listener = std::move(got[0]);
    s.control = std::move(adoptee.sock);  // EOF once the program closed its end: it runs
    return s;
  }
  ::kill(adoptee.pid, SIGKILL);
  int status;
  while (::waitpid(adoptee.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (n > 0 && m.tag == 'E') {
    m.what[sizeof m.what - 1] = '\0';
    return Error{std::string("confine the fork server's program: ") + m.what + ": " + std::strerror(m.err), m.err};
  }
  return Error{"confine the fork server's program: it ended before handing over the seccomp listener"};
}

}  // namespace lsb::init
