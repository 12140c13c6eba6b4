#include "runtime/native/fork_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "base/fd_passing.h"
#include "base/io.h"
#include "protocol/frame.h"
#include "runtime/native/native_box.h"

namespace lsb::native {
namespace {

constexpr int kReadyTimeoutMs = 20000;  // the interpreter's start, image imports included
constexpr int kForkTimeoutMs = 10000;   // a fork, its namespaces and init's exec
constexpr size_t kMaxWords = 4096;      // what is kept of the zygote's output

// Waits up to `ms` for `fd` to be readable; false on timeout.
bool Readable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  int r;
  do {
    r = ::poll(&p, 1, ms);
  } while (r < 0 && errno == EINTR);
  return r > 0;
}

// The pid a pidfd refers to, in our pid namespace (its fdinfo).
Result<pid_t> PidOf(int pidfd) {
  auto info = ReadFile("/proc/self/fdinfo/" + std::to_string(pidfd));
  if (!info.ok()) return info.error();
  size_t at = info->find("\nPid:");
  if (at == std::string::npos) return Error{"the fork server's box sent a descriptor that is not a pidfd"};
  long pid = std::strtol(info->c_str() + at + 5, nullptr, 10);
  if (pid <= 0) return Error{"the fork server's box ended before it started"};
  return static_cast<pid_t>(pid);
}

}  // namespace

Result<UniqueFd> OpenForkLibrary(const std::string& init_path) {
  std::string dir = init_path.substr(0, init_path.rfind('/') + 1);
  std::string path = dir + "liblsb-fork.so";
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return Error::FromErrno("open " + path + " (the fork server's library, built beside llm-sandbox-init)");
  return fd;
}

BoxUserLimits ZygoteUserLimits(uint32_t boxes) {
  BoxUserLimits l = DefaultBoxUserLimits();
  for (auto& w : l.sysctls) {
    const bool ns = w.path.find("_namespaces") != std::string::npos;
    const bool time_ns = w.path.find("max_time_namespaces") != std::string::npos;
    uint64_t v = std::stoull(w.value);
    w.value = std::to_string(time_ns ? 0 : ns ? boxes : v * boxes);
  }
  // The rlimit-backed counts are charged up the chain of user namespaces, each level checked
  // against the limit its namespace was made with. A box's namespace is made by the zygote's
  // fork, so with the zygote's limits every box would share one box's share at the zygote's
  // level (measured: queued signals used up in one box left none to another). As high as the
  // daemon may go there (LiftHostRlimits): each box stops at its own (lsb_fork_enter applies
  // them), the zygote is trusted code.
  for (auto& r : l.rlimits) {
    struct rlimit cur {};
    r.value = ::getrlimit(r.resource, &cur) == 0 ? cur.rlim_max : r.value;
  }
  return l;
}

bool LiftHostRlimits() {
  bool lifted = true;
  for (BoxRlimit r : kBoxRlimits) {
    struct rlimit v {RLIM_INFINITY, RLIM_INFINITY};
    if (::setrlimit(r.resource, &v) == 0) continue;
    lifted = false;  // no CAP_SYS_RESOURCE: as far as the hard limit goes
    if (::getrlimit(r.resource, &v) == 0) {
      v.rlim_cur = v.rlim_max;
      (void)::setrlimit(r.resource, &v);
    }
  }
  return lifted;
}

std::string UserLimitsText(const BoxUserLimits& l) {
  std::string out;
  for (const auto& w : l.sysctls) out += "sysctl " + w.path + " " + w.value + "\n";
  for (const auto& r : l.rlimits) out += "rlimit " + std::to_string(r.resource) + " " + std::to_string(r.value) + "\n";
  return out;
}

Result<std::unique_ptr<ForkServer>> ForkServer::Start(const protocol::BoxSetup& setup, protocol::RunSpec run,
                                                      const std::string& init_path, int init_fd,
                                                      const std::vector<std::string>& sources,
                                                      const LaunchZygote& launch) {
  std::unique_ptr<ForkServer> s(new ForkServer());
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return Error::FromErrno("socketpair for the fork server");
  s->ctl_ = UniqueFd(sv[0]);
  UniqueFd zygote_end(sv[1]);
  LSB_ASSIGN_OR_RETURN(UniqueFd lib, OpenForkLibrary(init_path));
  protocol::BoxSetup z = setup;
  z.fork = "zygote";
  z.fork_fds = {zygote_end.get(), lib.get(), init_fd};
  // The language's command up to its {file} (`python3 -u`): the interpreter starts with its flags.
  std::vector<std::string> argv = run.argv;
  if (!argv.empty() && argv.back() == "{file}") argv.pop_back();
  if (argv.empty()) return Error{"the policy's python has no command"};
  run.argv = argv;
  run.argv.push_back("-c");
  run.argv.push_back(ForkServerSource());
  for (const auto& source : sources) run.argv.push_back(source);  // compiled once, there
  run.timeout_ms = 10ull * 365 * 24 * 3600 * 1000;  // as long as the server lives
  run.timeout_grace_ms = 0;
  LSB_ASSIGN_OR_RETURN(s->zygote_, launch(z, run, z.fork_fds));
  zygote_end.reset();
  lib.reset();
  s->reader_ = std::thread([p = s.get()] { p->ReadZygote(); });
  char ready = 0;
  if (!Readable(s->ctl_.get(), kReadyTimeoutMs) || ::recv(s->ctl_.get(), &ready, 1, 0) != 1 || ready != 'R')
    return Error{"the fork server's interpreter did not start: " + s->Words() + " " + s->zygote_->Diagnostics()};
  return s;
}

ForkServer::~ForkServer() {
  ctl_.reset();  // the interpreter exits at the end of its socket
  if (zygote_) zygote_->Kill();
  if (reader_.joinable()) reader_.join();
  zygote_.reset();
}

void ForkServer::ReadZygote() {
  const int fd = zygote_->stream_fd();
  auto keep = [this](const std::string& what) {
    std::lock_guard<std::mutex> l(words_mu_);
    if (words_.size() < kMaxWords) words_ += what.substr(0, kMaxWords - words_.size());
  };
  for (;;) {
    auto f = protocol::ReadFrame(fd);
    if (!f.ok()) break;
    if (f->type == protocol::FrameType::kStdout || f->type == protocol::FrameType::kStderr) keep(f->payload);
    if (f->type == protocol::FrameType::kError) keep("init: " + f->payload + "\n");
    if (f->type == protocol::FrameType::kExit) {
      keep("the interpreter ended: " + f->payload + "\n");
      break;
    }
  }
  dead_ = true;
}

std::string ForkServer::Words() const {
  std::lock_guard<std::mutex> l(words_mu_);
  return words_.empty() ? "(no output)" : words_;
}

Result<LaunchedInit> ForkServer::Fork(const std::string& first_frames, const std::vector<UniqueFd>& join,
                                      const BoxUserLimits& limits, bool loopback_up) {
  if (dead_) return Error{"the fork server has ended: " + Words()};
  if (join.size() + 3 > kMaxPassedFds) return Error{"too many cgroup files for a fork server's box"};
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return Error::FromErrno("socketpair for the box's stream");
  UniqueFd stream(sv[0]), stream_child(sv[1]);
  int dp[2];
  if (::pipe2(dp, O_CLOEXEC) != 0) return Error::FromErrno("pipe for the box's diagnostics");
  UniqueFd diag(dp[0]), diag_child(dp[1]);
  if (::fcntl(diag.get(), F_SETFL, O_NONBLOCK) != 0) return Error::FromErrno("fcntl");
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return Error::FromErrno("socketpair for the box's report");
  UniqueFd report(sv[0]), report_child(sv[1]);

  const std::string msg = nlohmann::json{{"limits", UserLimitsText(limits)}, {"loopback", loopback_up}}.dump();
  std::vector<int> fds{stream_child.get(), diag_child.get(), report_child.get()};
  for (const auto& j : join) fds.push_back(j.get());
  {
    std::lock_guard<std::mutex> l(mu_);
    if (SendWithFds(ctl_.get(), msg.data(), msg.size(), fds.data(), fds.size()) != static_cast<ssize_t>(msg.size()))
      return Error::FromErrno("ask the fork server for a box");
  }
  stream_child.reset();
  diag_child.reset();
  report_child.reset();

  if (!Readable(report.get(), kForkTimeoutMs)) return Error{"the fork server made no box in time: " + Words()};
  char buf[1024];
  int got[kMaxPassedFds];
  size_t ngot = 0;
  ssize_t n = RecvWithFds(report.get(), buf, sizeof buf, got, &ngot);
  std::vector<UniqueFd> owned;
  for (size_t i = 0; i < ngot; ++i) owned.emplace_back(got[i]);
  if (n > 0 && buf[0] == 'E') return Error{"the fork server could not make a box: " + std::string(buf + 1, n - 1)};
  if (n != 1 || buf[0] != 'P' || owned.size() != 1)
    return Error{"the fork server's box ended before it started: " + Words()};
  LSB_ASSIGN_OR_RETURN(pid_t pid, PidOf(owned[0].get()));
  // Its init reads these first (the launcher writes them before it releases its child).
  LSB_TRY(WriteAll(stream.get(), first_frames));
  LaunchedInit li;
  li.process = std::make_unique<ChildProcess>(pid, std::move(owned[0]), /*ours=*/false);
  li.stream = std::move(stream);
  li.diagnostics = std::move(diag);
  return li;
}

}  // namespace lsb::native
