#include "runtime/native/native_box.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace lsb::native {
namespace {
constexpr size_t kDiagKeep = 16 << 10;  // the tail is where init's last words are
}

NativeBox::NativeBox(std::string id, std::unique_ptr<BoxCgroups> cgroups, LaunchedInit init,
                     std::unique_ptr<egress::EgressProxy> proxy)
    : id_(std::move(id)),
      cgroups_(std::move(cgroups)),
      process_(std::move(init.process)),
      stream_(std::move(init.stream)),
      diag_(std::move(init.diagnostics)),
      proxy_(std::move(proxy)) {}

std::vector<protocol::Event> NativeBox::TakeHostEvents(bool run_ended) {
  if (!proxy_) return {};
  // The program has exited: its connections close within moments; a background process the run
  // left behind may keep one open, and the result does not wait for it longer than this.
  return proxy_->TakeEvents(run_ended ? std::chrono::milliseconds(500) : std::chrono::milliseconds(0));
}

NativeBox::~NativeBox() {
  proxy_.reset();  // its connections end, its threads are joined
  stream_.reset();  // init sees EOF; it is killed anyway
  if (detached_) return;  // the helper tears down
  process_->Kill();
  process_->Reap();
  process_.reset();
  if (teardown_helper_ > 0) {
    // The helper removes the cgroups once init is gone (now): wait for it, so the box is gone
    // when we return.
    int st = 0;
    while (::waitpid(teardown_helper_, &st, 0) < 0 && errno == EINTR) {
    }
    if (cgroups_) cgroups_->Release();
    return;
  }
  if (cgroups_) (void)cgroups_->Destroy();
}

void NativeBox::Kill() { process_->Kill(); }

bool NativeBox::ArmTeardownHelper() {
  if (teardown_helper_ > 0) return true;
  if (detached_ || process_->reaped() || process_->pidfd() < 0) return false;
  pid_t helper = ::fork();
  if (helper < 0) return false;
  if (helper == 0) {
    // The helper: its own session (a signal to the caller's process group must not stop it
    // half-way), none of the caller's descriptors (init must see its stream end when the caller
    // dies; whoever reads the CLI's output sees EOF when the CLI exits), only init's pidfd.
    ::setsid();
    int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull >= 0) {
      ::dup2(devnull, 0);
      ::dup2(devnull, 1);
      ::dup2(devnull, 2);
    }
    int pidfd = process_->pidfd();
    if (pidfd > 3) ::syscall(SYS_close_range, 3u, static_cast<unsigned>(pidfd - 1), 0u);
    ::syscall(SYS_close_range, static_cast<unsigned>(pidfd + 1), ~0u, 0u);
    // init is gone once its pidfd reads as exited (it may not be our parent's child any more: its
    // zombie goes to the caller's subreaper or PID 1 once the caller exits). Destroy() then kills
    // anything left in the groups and removes them, retrying while killed tasks leave.
    pollfd p{pidfd, POLLIN, 0};
    while (::poll(&p, 1, -1) < 0 && errno == EINTR) {
    }
    if (cgroups_) (void)cgroups_->Destroy();
    if (after_teardown_) after_teardown_();
    ::_exit(0);
  }
  teardown_helper_ = helper;
  return true;
}

bool NativeBox::DetachTeardown() {
  if (!ArmTeardownHelper()) return false;
  proxy_.reset();
  process_->Kill();  // the box is over; the helper sees init go and removes the rest
  // init is dying and will be reaped by whoever inherits it; the helper, our child, too.
  process_->Release();
  if (cgroups_) cgroups_->Release();
  detached_ = true;
  return true;
}

BoxVerdict NativeBox::Verdict() {
  BoxVerdict v;
  if (!cgroups_) return v;
  CgroupStats s = cgroups_->Read();
  v.oom_kill_count = s.oom_kills;
  v.pids_limit_events = s.pids_max_events;
  v.memory_peak_bytes = s.memory_peak_bytes;
  v.cpu_ns = s.cpu_ns;
  return v;
}

std::optional<BoxUsage> NativeBox::Usage() {
  if (!cgroups_) return std::nullopt;
  CgroupStats s = cgroups_->Read();
  return BoxUsage{s.cpu_ns, s.memory_current_bytes};
}

void NativeBox::DrainDiagnostics() {
  if (!diag_) return;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(diag_.get(), buf, sizeof buf);
    if (n > 0) {
      diag_text_.append(buf, static_cast<size_t>(n));
      if (diag_text_.size() > 2 * kDiagKeep) diag_text_.erase(0, diag_text_.size() - kDiagKeep);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) diag_.reset();  // every writer is gone
    break;
  }
}

std::string NativeBox::Diagnostics() {
  DrainDiagnostics();
  if (diag_text_.size() > kDiagKeep) return diag_text_.substr(diag_text_.size() - kDiagKeep);
  return diag_text_;
}

}  // namespace lsb::native
