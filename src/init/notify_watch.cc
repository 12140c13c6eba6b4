#include "init/notify_watch.h"

#include <fcntl.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>

#include "init/caller_path.h"
#include "init/diag.h"
#include "init/seccomp_filter.h"
#include "init/sockaddr.h"

namespace lsb::init {
namespace {

using protocol::AlertRule;
using protocol::Severity;

seccomp_notif_sizes g_sizes{};

// sendmmsg sends at most UIO_MAXIOV messages; the kernel ignores the rest of vlen.
constexpr uint64_t kMaxMmsg = 1024;
// Alerts for one call: one per distinct refused destination, up to this many.
constexpr size_t kMaxAddressesReported = 16;

// The target's memory, valid only while its notification is (checked with ID_VALID by callers).
class RemoteMem {
 public:
  explicit RemoteMem(pid_t pid) : fd_(::open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC)) {}
  bool ok() const { return fd_.valid(); }
  // Exactly `len` bytes, or EFAULT.
  Result<std::string> Read(uint64_t addr, size_t len) const {
    std::string buf(len, '\0');
    size_t got = 0;
    while (got < len) {
      ssize_t n = ::pread(fd_.get(), buf.data() + got, len - got, static_cast<off_t>(addr + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Error{"unreadable memory", EFAULT};
      got += static_cast<size_t>(n);
    }
    return buf;
  }
  // A NUL-terminated string, read page-aware in small steps: EFAULT, or ENAMETOOLONG past `max`.
  Result<std::string> ReadString(uint64_t addr, size_t max = PATH_MAX) const {
    std::string out;
    char buf[256];
    while (out.size() < max) {
      size_t step = sizeof buf - (addr % sizeof buf);
      ssize_t n = ::pread(fd_.get(), buf, step, static_cast<off_t>(addr));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Error{"unreadable memory", EFAULT};
      auto* nul = static_cast<char*>(std::memchr(buf, '\0', static_cast<size_t>(n)));
      if (nul) {
        out.append(buf, static_cast<size_t>(nul - buf));
        return out;
      }
      out.append(buf, static_cast<size_t>(n));
      addr += static_cast<uint64_t>(n);
    }
    return Error{"string too long", ENAMETOOLONG};
  }

 private:
  UniqueFd fd_;
};

std::string ReadLink(const std::string& p) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink(p.c_str(), buf, sizeof buf - 1);
  if (n < 0) return {};
  return std::string(buf, static_cast<size_t>(n));
}

std::vector<std::string> ReadArgv(const RemoteMem& mem, uint64_t argv_ptr) {
  std::vector<std::string> argv;
  size_t total = 0;
  for (int i = 0; argv_ptr && i < 64 && total < 16384; ++i) {
    auto p = mem.Read(argv_ptr + 8 * static_cast<uint64_t>(i), 8);
    if (!p.ok()) break;
    uint64_t s;
    std::memcpy(&s, p->data(), 8);
    if (s == 0) break;
    auto str = mem.ReadString(s, 4096);
    if (!str.ok()) break;
    total += str->size();
    argv.push_back(std::move(*str));
  }
  return argv;
}

const char* SyscallName(int nr) {
  switch (nr) {
    case SYS_execve: return "execve";
    case SYS_execveat: return "execveat";
    case SYS_connect: return "connect";
    case SYS_sendto: return "sendto";
    case SYS_sendmsg: return "sendmsg";
    case SYS_sendmmsg: return "sendmmsg";
    case SYS_bind: return "bind";
    case SYS_open: return "open";
    case SYS_openat: return "openat";
    case SYS_openat2: return "openat2";
    case SYS_creat: return "creat";
#ifdef SYS_arch_prctl
    case SYS_arch_prctl: return "arch_prctl";
#endif
    default: return "syscall";
  }
}

// What init answers one notification with, and what it reports.
struct Outcome {
  bool vanished = false;  // the notification is no longer valid: nothing to answer or report
  int error = 0;          // 0: continue the call (the kernel decides); else the errno init answers
  bool kill = false;      // SIGKILL the caller after answering
  std::vector<protocol::Event> alerts;
  std::optional<protocol::Event> trace;  // reported only in trace mode
};

// An alert of `rule` about the call `base` describes, with the rule's default severity.
protocol::Event Denied(const protocol::Event& base, AlertRule rule, std::string message) {
  protocol::Event ev = base;
  ev.decision = "denied";
  ev.rule = rule;
  ev.severity = protocol::DefaultSeverity(rule);
  ev.message = std::move(message);
  return ev;
}

// execve / execveat: the path is resolved as the caller would resolve it and judged by identity;
// anything that cannot be resolved is answered here, never continued. Longer than most (~85
// lines): every read of the caller's state comes before the one still_valid() check, and each
// refusal after it is a two-line early return; split, the reads and the check could drift apart.
Outcome DecideExec(const seccomp_notif& req, const RemoteMem& mem, const ExecPolicy& policy,
                   const std::function<bool()>& still_valid, protocol::Event ev) {
  const pid_t pid = static_cast<pid_t>(req.pid);
  const auto& a = req.data.args;
  const bool at = req.data.nr == SYS_execveat;
  const int dirfd = at ? static_cast<int>(a[0]) : AT_FDCWD;
  const int flags = at ? static_cast<int>(a[4]) : 0;
  const std::string proc = "/proc/" + std::to_string(pid);
  Result<std::string> path = mem.ok() ? mem.ReadString(at ? a[1] : a[0]) : Result<std::string>(Error{"no memory access", EFAULT});
  ev.argv = mem.ok() ? ReadArgv(mem, at ? a[2] : a[1]) : std::vector<std::string>{};
  const bool by_fd = (flags & AT_EMPTY_PATH) != 0;
  std::optional<Result<UniqueFd>> file;
  if (path.ok() && !path->empty() && !by_fd)
    file = ResolveAsCaller(pid, dirfd, *path, (flags & AT_SYMLINK_NOFOLLOW) == 0);
  // For the report only: the directory a relative path starts from, as init can name it.
  std::string base;
  if (path.ok() && !path->empty() && (*path)[0] != '/')
    base = ReadLink(dirfd == AT_FDCWD ? proc + "/cwd" : proc + "/fd/" + std::to_string(dirfd));
  const std::string fd_target = by_fd ? ReadLink(proc + "/fd/" + std::to_string(dirfd)) : std::string();
  std::string resolved;
  struct stat st{};
  bool have_stat = false;
  if (file && file->ok()) {
    have_stat = ::fstat((*file)->get(), &st) == 0;
    resolved = ReadLink("/proc/self/fd/" + std::to_string((*file)->get()));
  }
  Outcome out;
  if (!still_valid()) {
    out.vanished = true;
    return out;
  }

  if (by_fd) {
    ev.path = fd_target.empty() ? "fd " + std::to_string(dirfd) : fd_target;
    out.error = EPERM;
    out.alerts.push_back(Denied(ev, AlertRule::kDeniedExec, "execveat(AT_EMPTY_PATH) of " + ev.path +
                                                      " refused: a run by descriptor is never allowed"));
    return out;
  }
  if (!path.ok()) {
    out.error = path.error().sys_errno;
    out.alerts.push_back(Denied(ev, AlertRule::kDeniedExec, "exec refused: its path could not be read (" + path.error().message + ")"));
    return out;
  }
  if (path->empty()) {
    out.error = ENOENT;  // what the kernel answers for "" without AT_EMPTY_PATH
    return out;
  }
  const std::string lexical = JoinPath(base.empty() ? "/" : base, *path);
  ev.path = lexical;
  if (!file->ok()) {
    const int err = file->error().sys_errno ? file->error().sys_errno : EACCES;
    if (err == ENOENT || err == ENOTDIR) {
      // Nothing there for the caller either: answered as the kernel would, reported only when
      // commands.deny names the path.
      ExecDecision d = policy.DecideAbsent(lexical);
      out.error = d.allow ? err : EACCES;
      if (!d.allow) out.alerts.push_back(Denied(ev, AlertRule::kDeniedExec, "exec of " + lexical + " denied: " + d.reason));
      return out;
    }
    out.error = err;
    out.alerts.push_back(Denied(ev, AlertRule::kDeniedExec, "exec of " + lexical + " refused: it cannot be resolved as the caller sees it (" +
                                                       file->error().message + ")"));
    return out;
  }
  if (!have_stat) {
    out.error = EACCES;
    out.alerts.push_back(Denied(ev, AlertRule::kDeniedExec, "exec of " + lexical + " refused: its file cannot be identified"));
    return out;
  }
  if (S_ISLNK(st.st_mode) || S_ISDIR(st.st_mode)) {
    out.error = S_ISLNK(st.st_mode) ? ELOOP : EACCES;  // what the kernel answers; nothing to run
    return out;
  }
  // Devices too: a deny-listed file outside the bin dirs is covered with /dev/null (mounts.cc).
  ExecDecision d = policy.Decide(lexical, FileId::Of(st));
  const std::string shown = resolved.empty() || resolved == lexical ? lexical : lexical + " (" + resolved + ")";
  if (!d.allow || !S_ISREG(st.st_mode)) {
    out.error = EACCES;
    out.alerts.push_back(Denied(ev, AlertRule::kDeniedExec, "exec of " + shown + " denied: " + (d.allow ? "not a regular file" : d.reason)));
    return out;
  }
  ev.message = "exec of " + shown;
  ev.severity = Severity::kInfo;
  out.trace = std::move(ev);
  return out;
}

// arch_prctl(ARCH_SET_FS): the first thing any new image does, before code of the program runs
// (notify_watch.h). A process whose image is the ELF interpreter itself was started by running
// ld.so directly, past the exec check (a thread rewrote the path after init read it): killed.
Outcome CheckNewImage(const seccomp_notif& req, const ExecPolicy& policy, const std::function<bool()>& still_valid,
                      protocol::Event ev) {
  const std::string exe = "/proc/" + std::to_string(req.pid) + "/exe";
  struct stat st{};
  const bool known = ::stat(exe.c_str(), &st) == 0;
  const int err = errno;
  const std::string name = ReadLink(exe);
  Outcome out;
  if (!still_valid()) {
    out.vanished = true;
    return out;
  }
  if (known && !policy.IsElfInterpreter(FileId::Of(st))) return out;
  out.error = EPERM;
  out.kill = true;
  ev.kind = "execve";
  ev.path = name;
  out.alerts.push_back(Denied(
      ev, AlertRule::kDeniedExec,
      known ? "the ELF interpreter " + name + " was started directly (the exec path changed after the watch read it): "
                  "killed before it loaded a program"
            : "a new process image could not be identified (" + std::string(std::strerror(err)) + "): killed"));
  return out;
}

// connect / sendto / sendmsg / sendmmsg / bind: every destination the call names is read and
// checked; with the network off an inet destination is refused, and so is a destination init
// cannot read (fail closed).
Outcome DecideNetworkCall(const seccomp_notif& req, const RemoteMem& mem, const WatchConfig& cfg,
                          const std::function<bool()>& still_valid, protocol::Event ev) {
  const auto& a = req.data.args;
  std::vector<std::string> raws;
  bool unreadable = !mem.ok();
  auto add = [&](uint64_t ptr, uint64_t len) {
    if (ptr == 0 || len == 0) return;  // no address: a connected socket, the kernel knows where
    auto raw = mem.Read(ptr, static_cast<size_t>(std::min<uint64_t>(len, 128)));
    if (raw.ok()) raws.push_back(std::move(*raw));
    else unreadable = true;
  };
  auto add_msghdr = [&](const char* hdr) {
    msghdr m;
    std::memcpy(&m, hdr, sizeof m);
    add(reinterpret_cast<uint64_t>(m.msg_name), m.msg_namelen);
  };
  if (mem.ok()) {
    if (ev.kind == "connect" || ev.kind == "bind") {
      add(a[1], a[2]);
    } else if (ev.kind == "sendto") {
      add(a[4], a[5]);
    } else if (ev.kind == "sendmsg") {
      auto hdr = mem.Read(a[1], sizeof(msghdr));
      if (hdr.ok()) add_msghdr(hdr->data());
      else unreadable = true;
    } else if (ev.kind == "sendmmsg") {
      const uint64_t count = std::min<uint64_t>(a[2], kMaxMmsg);
      if (count > 0) {
        auto vec = mem.Read(a[1], static_cast<size_t>(count) * sizeof(mmsghdr));
        if (vec.ok())
          for (uint64_t i = 0; i < count; ++i) add_msghdr(vec->data() + i * sizeof(mmsghdr));
        else
          unreadable = true;
      }
    }
  }
  Outcome out;
  if (!still_valid()) {
    out.vanished = true;
    return out;
  }
  std::vector<std::string> inet, all;
  for (const auto& raw : raws) {
    SockAddrInfo info = DescribeSockaddr(raw);
    if (info.text.empty()) continue;
    if (std::find(all.begin(), all.end(), info.text) == all.end()) all.push_back(info.text);
    if (info.inet && std::find(inet.begin(), inet.end(), info.text) == inet.end()) inet.push_back(info.text);
  }
  // The destinations refused, each with the errno; "the network is off" or "only the proxy".
  const bool via_proxy = cfg.network_enabled && !cfg.egress_proxy.empty();
  std::vector<std::string> refused;
  int refuse_errno = 0;
  for (const auto& dest : inet)
    if (int e = DecideDestination(ev.kind, true, dest, cfg); e != 0) {
      refused.push_back(dest);
      refuse_errno = e;
    }
  const int refuse = via_proxy ? (DecideNetwork(ev.kind, true, false) != 0 ? ENETUNREACH : 0)
                               : DecideNetwork(ev.kind, true, cfg.network_enabled);
  const std::string why = via_proxy ? " refused: only the egress proxy " + cfg.egress_proxy + " is reachable"
                                    : " refused: the network is off";
  if (!refused.empty()) {
    out.error = refuse_errno;
    for (size_t i = 0; i < refused.size() && i < kMaxAddressesReported; ++i) {
      protocol::Event alert = Denied(ev, AlertRule::kNetworkAttempt, ev.kind + " to " + refused[i] + why);
      alert.address = refused[i];
      out.alerts.push_back(std::move(alert));
    }
    if (refused.size() > kMaxAddressesReported)
      out.alerts.back().message += " (and " + std::to_string(refused.size() - kMaxAddressesReported) +
                                   " more destinations in the same call)";
    return out;
  }
  if (refuse != 0 && unreadable) {
    out.error = EFAULT;
    protocol::Event alert = Denied(ev, AlertRule::kNetworkAttempt, ev.kind + " refused: its destination could not be read" +
                                   (via_proxy ? std::string(" (only the egress proxy is reachable)") : std::string(" (the network is off)")));
    alert.address = "(unreadable)";
    out.alerts.push_back(std::move(alert));
    return out;
  }
  std::string joined;
  for (const auto& t : all) joined += (joined.empty() ? "" : ", ") + t;
  ev.address = all.empty() ? std::string() : all.front();
  ev.message = ev.kind + (joined.empty() ? "" : " " + joined);
  ev.severity = Severity::kInfo;
  out.trace = std::move(ev);
  return out;
}

// open/openat/openat2/creat, trace mode only: record the path, continue; Landlock and the mounts decide.
Outcome ReportOpen(const seccomp_notif& req, const RemoteMem& mem, const std::function<bool()>& still_valid,
                   protocol::Event ev) {
  const auto& a = req.data.args;
  const bool at = ev.kind == "openat" || ev.kind == "openat2";
  auto path = mem.ok() ? mem.ReadString(at ? a[1] : a[0]) : Result<std::string>(Error{"no memory access", EFAULT});
  std::string base;
  if (path.ok() && !path->empty() && (*path)[0] != '/') {
    const int dirfd = static_cast<int>(a[0]);
    const std::string proc = "/proc/" + std::to_string(req.pid);
    base = (!at || dirfd == AT_FDCWD) ? ReadLink(proc + "/cwd") : ReadLink(proc + "/fd/" + std::to_string(dirfd));
  }
  Outcome out;
  if (!still_valid()) {
    out.vanished = true;
    return out;
  }
  ev.path = path.ok() ? JoinPath(base.empty() ? "/" : base, *path) : std::string();
  ev.message = ev.kind + " " + ev.path;
  ev.severity = Severity::kInfo;
  out.trace = std::move(ev);
  return out;
}

}  // namespace

int DecideNetwork(const std::string& call, bool inet, bool network_enabled) {
  if (network_enabled || !inet) return 0;
  if (call == "bind") return 0;  // local only; nothing leaves the box's network namespace
  return ENETUNREACH;
}

int DecideDestination(const std::string& call, bool inet, const std::string& destination, const WatchConfig& cfg) {
  if (!cfg.network_enabled || cfg.egress_proxy.empty()) return DecideNetwork(call, inet, cfg.network_enabled);
  if (!inet || call == "bind" || destination == cfg.egress_proxy) return 0;
  return ENETUNREACH;
}

Status NotifyWatch::Probe() {
  if (::syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &g_sizes) != 0)
    return Error::FromErrno("seccomp user notification is not available (needed to watch exec and network calls)");
  uint32_t action = SECCOMP_RET_USER_NOTIF;
  if (::syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) != 0)
    return Error::FromErrno("seccomp: SECCOMP_RET_USER_NOTIF is not available");
  return OkStatus();
}

namespace {

// One notification as the kernel hands it over and init's answer to it, in buffers of the sizes
// the kernel reported (Probe), which may be larger than this build's structures.
class Exchange {
 public:
  bool fits() const {
    return std::max<size_t>(g_sizes.seccomp_notif, sizeof(seccomp_notif)) <= sizeof req_buf_ &&
           std::max<size_t>(g_sizes.seccomp_notif_resp, sizeof(seccomp_notif_resp)) <= sizeof resp_buf_;
  }
  seccomp_notif& req() { return *reinterpret_cast<seccomp_notif*>(req_buf_); }
  seccomp_notif_resp& resp() { return *reinterpret_cast<seccomp_notif_resp*>(resp_buf_); }

 private:
  alignas(8) char req_buf_[256] = {};
  alignas(8) char resp_buf_[256] = {};
};

// A key escape syscall (seccomp_filter.h): always refused, never continued, and reported.
Outcome RefuseEscape(const char* escape, protocol::Event ev) {
  Outcome out;
  out.error = EPERM;
  ev.kind = "syscall";
  ev.decision = "denied";
  ev.rule = AlertRule::kEscapeSyscall;
  ev.severity = protocol::DefaultSeverity(ev.rule);
  ev.message = std::string(escape) + " refused: an escape syscall (EPERM)";
  ev.argv = {escape};
  out.alerts.push_back(std::move(ev));
  return out;
}

// What to answer `req` with: each watched call has its own judge. The pid may have been reused
// between RECV and the judge's reads: they are only trusted if the notification is still pending
// afterwards (`still_valid`), else the outcome is `vanished`.
Outcome Judge(int listener, const seccomp_notif& req, const WatchConfig& cfg, protocol::Event ev) {
  if (const char* escape = WatchedEscapeName(req.data.nr)) return RefuseEscape(escape, std::move(ev));
  const uint64_t id = req.id;
  const std::function<bool()> still_valid = [&] { return ::ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0; };
#ifdef SYS_arch_prctl
  if (req.data.nr == SYS_arch_prctl) return CheckNewImage(req, *cfg.exec, still_valid, std::move(ev));
#endif
  RemoteMem mem(static_cast<pid_t>(req.pid));
  if (!mem.ok()) Diag("watch: cannot open /proc/" + std::to_string(req.pid) + "/mem: " + std::strerror(errno));
  if (ev.kind == "open" || ev.kind == "openat" || ev.kind == "openat2" || ev.kind == "creat")
    return ReportOpen(req, mem, still_valid, std::move(ev));
  if (ev.kind == "execve" || ev.kind == "execveat") return DecideExec(req, mem, *cfg.exec, still_valid, std::move(ev));
  return DecideNetworkCall(req, mem, cfg, still_valid, std::move(ev));
}

// Continues the call, or fails it with the outcome's errno. A target that died meanwhile
// (ENOENT) is no error.
Status Answer(int listener, Exchange& x, const Outcome& out) {
  seccomp_notif_resp& resp = x.resp();
  resp.id = x.req().id;
  resp.flags = out.error != 0 ? 0 : SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  resp.error = -out.error;
  resp.val = 0;
  if (::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) != 0 && errno != ENOENT)
    return Error::FromErrno("seccomp: send notification reply");
  return OkStatus();
}

}  // namespace

Status NotifyWatch::HandleOne(const EventSink& emit) {
  Exchange x;
  if (!x.fits()) return Error{"seccomp: notification structures too large"};
  if (::ioctl(fd_.get(), SECCOMP_IOCTL_NOTIF_RECV, &x.req()) != 0) {
    if (errno == EINTR || errno == ENOENT) return OkStatus();  // target died before we looked
    return Error::FromErrno("seccomp: receive notification");
  }
  const pid_t pid = static_cast<pid_t>(x.req().pid);
  protocol::Event ev;
  ev.pid = pid;
  ev.kind = SyscallName(x.req().data.nr);
  ev.decision = "allowed";
  Outcome out = Judge(fd_.get(), x.req(), cfg_, std::move(ev));
  if (out.vanished) return OkStatus();
  LSB_TRY(Answer(fd_.get(), x, out));
  if (out.kill) ::kill(pid, SIGKILL);  // the thread's whole process
  // Reported after the answer: the caller waits for it, the host does not.
  for (auto& alert : out.alerts) emit(std::move(alert));
  if (cfg_.trace && out.alerts.empty() && out.trace) emit(std::move(*out.trace));
  return OkStatus();
}

}  // namespace lsb::init
