#include "init/notify_watch.h"

#include <fcntl.h>
#include <linux/seccomp.h>
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
#include <memory>
#include <optional>

#include "init/diag.h"
#include "init/seccomp_filter.h"
#include "init/sockaddr.h"

namespace lsb::init {
namespace {

seccomp_notif_sizes g_sizes{};

// The target's memory, valid only while its notification is (checked with ID_VALID by callers).
class RemoteMem {
 public:
  explicit RemoteMem(pid_t pid) : fd_(::open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC)) {}
  bool ok() const { return fd_.valid(); }
  std::optional<std::string> Read(uint64_t addr, size_t len) const {
    std::string buf(len, '\0');
    ssize_t n = ::pread(fd_.get(), buf.data(), len, static_cast<off_t>(addr));
    if (n != static_cast<ssize_t>(len)) return std::nullopt;
    return buf;
  }
  // A NUL-terminated string, read page-aware in small steps.
  std::optional<std::string> ReadString(uint64_t addr, size_t max = PATH_MAX) const {
    std::string out;
    char buf[256];
    while (out.size() < max) {
      size_t step = sizeof buf - (addr % sizeof buf);
      ssize_t n = ::pread(fd_.get(), buf, step, static_cast<off_t>(addr));
      if (n <= 0) return std::nullopt;
      auto* nul = static_cast<char*>(std::memchr(buf, '\0', static_cast<size_t>(n)));
      if (nul) {
        out.append(buf, static_cast<size_t>(nul - buf));
        return out;
      }
      out.append(buf, static_cast<size_t>(n));
      addr += static_cast<uint64_t>(n);
    }
    return out;
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
    if (!p) break;
    uint64_t s;
    std::memcpy(&s, p->data(), 8);
    if (s == 0) break;
    auto str = mem.ReadString(s, 4096);
    if (!str) break;
    total += str->size();
    argv.push_back(std::move(*str));
  }
  return argv;
}

std::optional<std::string> ReadSockaddr(const RemoteMem& mem, uint64_t ptr, uint64_t len) {
  if (ptr == 0 || len == 0) return std::string();
  return mem.Read(ptr, std::min<uint64_t>(len, 128));
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
    default: return "syscall";
  }
}

}  // namespace

int DecideNetwork(const std::string& call, bool inet, bool network_enabled) {
  if (network_enabled || !inet) return 0;
  if (call == "bind") return 0;  // local only; nothing leaves the box's network namespace
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

Status NotifyWatch::HandleOne(const EventSink& emit) {
  size_t req_size = std::max<size_t>(g_sizes.seccomp_notif, sizeof(seccomp_notif));
  size_t resp_size = std::max<size_t>(g_sizes.seccomp_notif_resp, sizeof(seccomp_notif_resp));
  alignas(8) char req_buf[256] = {};
  alignas(8) char resp_buf[256] = {};
  if (req_size > sizeof req_buf || resp_size > sizeof resp_buf) return Error{"seccomp: notification structures too large"};
  auto* req = reinterpret_cast<seccomp_notif*>(req_buf);
  auto* resp = reinterpret_cast<seccomp_notif_resp*>(resp_buf);
  if (::ioctl(fd_.get(), SECCOMP_IOCTL_NOTIF_RECV, req) != 0) {
    if (errno == EINTR || errno == ENOENT) return OkStatus();  // target died before we looked
    return Error::FromErrno("seccomp: receive notification");
  }
  resp->id = req->id;
  resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  resp->error = 0;
  resp->val = 0;

  const pid_t pid = static_cast<pid_t>(req->pid);
  const auto& a = req->data.args;
  const char* name = SyscallName(req->data.nr);
  protocol::Event ev;
  ev.pid = pid;
  ev.kind = name;
  ev.decision = "allowed";
  bool alert = false;

  // A key escape syscall (seccomp_filter.h): always refused, never continued, and reported.
  if (const char* escape = WatchedEscapeName(req->data.nr)) {
    resp->flags = 0;
    resp->error = -EPERM;
    ev.kind = "syscall";
    ev.decision = "denied";
    ev.rule = "escape_syscall";
    ev.severity = "critical";
    ev.message = std::string(escape) + " refused: an escape syscall (EPERM)";
    ev.argv = {escape};
    if (::ioctl(fd_.get(), SECCOMP_IOCTL_NOTIF_SEND, resp) != 0 && errno != ENOENT)
      return Error::FromErrno("seccomp: send notification reply");
    emit(std::move(ev));
    return OkStatus();
  }

  RemoteMem mem(pid);
  if (!mem.ok()) Diag("watch: cannot open /proc/" + std::to_string(pid) + "/mem: " + std::strerror(errno));
  // The pid may have been reused between RECV and open: only trust what we read if the
  // notification is still pending afterwards.
  auto still_valid = [&] { return ::ioctl(fd_.get(), SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) == 0; };

  if (ev.kind == "open" || ev.kind == "openat" || ev.kind == "openat2" || ev.kind == "creat") {
    // Trace mode only: record the path, continue; Landlock and the mounts decide.
    bool at = ev.kind == "openat" || ev.kind == "openat2";
    auto path = mem.ok() ? mem.ReadString(at ? a[1] : a[0]) : std::nullopt;
    std::string base;
    if (path && !path->empty() && (*path)[0] != '/') {
      int dirfd = static_cast<int>(a[0]);
      base = (!at || dirfd == AT_FDCWD) ? ReadLink("/proc/" + std::to_string(pid) + "/cwd")
                                        : ReadLink("/proc/" + std::to_string(pid) + "/fd/" + std::to_string(dirfd));
    }
    if (!still_valid()) return OkStatus();
    ev.path = path ? JoinPath(base.empty() ? "/" : base, *path) : std::string();
    ev.message = ev.kind + " " + ev.path;
  } else if (ev.kind == "execve" || ev.kind == "execveat") {
    bool at = ev.kind == "execveat";
    uint64_t path_ptr = at ? a[1] : a[0];
    uint64_t argv_ptr = at ? a[2] : a[1];
    auto path = mem.ok() ? mem.ReadString(path_ptr) : std::nullopt;
    auto argv = mem.ok() ? ReadArgv(mem, argv_ptr) : std::vector<std::string>{};
    std::string base;
    if (path && !path->empty() && (*path)[0] != '/') {
      int dirfd = static_cast<int>(a[0]);
      base = (!at || dirfd == AT_FDCWD) ? ReadLink("/proc/" + std::to_string(pid) + "/cwd")
                                        : ReadLink("/proc/" + std::to_string(pid) + "/fd/" + std::to_string(dirfd));
    }
    if (!still_valid()) return OkStatus();
    if (path) {
      std::string lexical = JoinPath(base.empty() ? "/" : base, *path);
      std::optional<std::string> real;
      char buf[PATH_MAX];
      std::string joined = (*path)[0] == '/' || base.empty() ? *path : base + "/" + *path;
      struct stat st;
      if (!path->empty() && ::realpath(joined.c_str(), buf) && ::stat(buf, &st) == 0 && !S_ISDIR(st.st_mode))
        real = std::string(buf);
      ExecDecision d = cfg_.exec->Decide(lexical, real);
      ev.path = lexical;
      ev.argv = std::move(argv);
      if (!d.allow) {
        resp->flags = 0;
        resp->error = -EACCES;
        ev.decision = "denied";
        ev.rule = "denied_exec";
        ev.severity = "warning";
        ev.message = "exec of " + lexical + " denied: " + d.reason;
        alert = true;
      } else {
        ev.message = "exec of " + lexical;
      }
    }
  } else {
    std::optional<std::string> raw;
    if (mem.ok()) {
      if (ev.kind == "connect" || ev.kind == "bind") {
        raw = ReadSockaddr(mem, a[1], a[2]);
      } else if (ev.kind == "sendto") {
        raw = ReadSockaddr(mem, a[4], a[5]);
      } else if (ev.kind == "sendmsg" || ev.kind == "sendmmsg") {
        // struct msghdr starts with msg_name, msg_namelen; mmsghdr is a msghdr plus 8 bytes.
        uint64_t count = ev.kind == "sendmsg" ? 1 : std::min<uint64_t>(a[2], 64);
        for (uint64_t i = 0; i < count; ++i) {
          auto hdr = mem.Read(a[1] + i * (sizeof(msghdr) + (ev.kind == "sendmsg" ? 0 : 8)), 16);
          if (!hdr) break;
          uint64_t name_ptr;
          uint32_t name_len;
          std::memcpy(&name_ptr, hdr->data(), 8);
          std::memcpy(&name_len, hdr->data() + 8, 4);
          raw = ReadSockaddr(mem, name_ptr, name_len);
          if (raw && DescribeSockaddr(*raw).inet) break;  // the one that matters
        }
      }
    }
    if (!still_valid()) return OkStatus();
    SockAddrInfo addr = raw ? DescribeSockaddr(*raw) : SockAddrInfo{};
    ev.address = addr.text;
    int err = DecideNetwork(ev.kind, addr.inet, cfg_.network_enabled);
    if (err != 0) {
      resp->flags = 0;
      resp->error = -err;
      ev.decision = "denied";
      ev.rule = "network_attempt";
      ev.severity = "warning";
      ev.message = ev.kind + " to " + addr.text + " refused: the network is off";
      alert = true;
    } else {
      ev.message = ev.kind + (addr.text.empty() ? "" : " " + addr.text);
    }
  }

  if (::ioctl(fd_.get(), SECCOMP_IOCTL_NOTIF_SEND, resp) != 0 && errno != ENOENT)
    return Error::FromErrno("seccomp: send notification reply");
  if (alert || cfg_.trace) {
    if (!alert) ev.severity = "info";
    emit(std::move(ev));
  }
  return OkStatus();
}

}  // namespace lsb::init
