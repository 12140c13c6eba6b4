#include "runtime/native/native_box.h"

#include <unistd.h>

#include <cerrno>

namespace lsb::native {
namespace {
constexpr size_t kDiagKeep = 16 << 10;  // the tail is where init's last words are
}

NativeBox::NativeBox(std::string id, std::unique_ptr<BoxCgroups> cgroups, LaunchedInit init)
    : id_(std::move(id)),
      cgroups_(std::move(cgroups)),
      process_(std::move(init.process)),
      stream_(std::move(init.stream)),
      diag_(std::move(init.diagnostics)) {}

NativeBox::~NativeBox() {
  stream_.reset();  // init sees EOF; it is killed anyway
  process_->Kill();
  process_->Reap();
  process_.reset();
  if (cgroups_) (void)cgroups_->Destroy();
}

void NativeBox::Kill() { process_->Kill(); }

BoxVerdict NativeBox::Verdict() {
  BoxVerdict v;
  if (!cgroups_) return v;
  CgroupStats s = cgroups_->Read();
  v.oom_kill_count = s.oom_kills;
  v.pids_limit_events = s.pids_max_events;
  v.oom_killed = s.oom_kills > 0;
  v.pids_limit_hit = s.pids_max_events > 0;
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
