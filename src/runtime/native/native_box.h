// One native box: owns init (and with it the pid namespace), the host end of its stream, the read
// end of its stderr and its cgroups. Destruction order: kill init, reap it (the kernel has then
// killed every process of the namespace), remove the cgroups (or wait for the teardown helper that
// does).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "base/unique_fd.h"
#include "image/store_lease.h"
#include "egress/egress_proxy.h"
#include "runtime/backend.h"
#include "runtime/native/box_cgroup.h"
#include "runtime/native/launcher.h"

namespace lsb::native {

class NativeBox : public Box {
 public:
  // `proxy`: the box's egress proxy when its network is on (served until the box goes), or null.
  NativeBox(std::string id, std::unique_ptr<BoxCgroups> cgroups, LaunchedInit init,
            std::unique_ptr<egress::EgressProxy> proxy = nullptr);
  ~NativeBox() override;

  int stream_fd() const override { return stream_.get(); }
  BoxVerdict Verdict() override;
  void Kill() override;
  std::string id() const override { return id_; }
  std::string Diagnostics() override;
  void BeginRun() override {
    if (cgroups_) cgroups_->ResetPeak();
    if (proxy_) proxy_->BeginRun();
  }
  std::vector<protocol::Event> TakeHostEvents(bool run_ended) override;

  std::optional<BoxUsage> Usage() override;

  // For `llm-sandbox run`, which exits right after its one run. ArmTeardownHelper() forks, while
  // the box sets itself up, the process that will tear it down: it waits until init is gone, then
  // removes the cgroups (killing whatever is left in them first). From then on this object never
  // removes the cgroups itself: DetachTeardown() kills init and returns at once, so the CLI exits
  // without waiting for the kernel's namespace teardown (nor forking on its way out); the
  // destructor (a run that was interrupted or failed) kills init and waits for the helper, so the
  // box is gone when it returns. If the CLI is killed, init sees its stream end and exits, and the
  // helper removes the rest. Returns false, changing nothing, when the helper cannot be started.
  // The caller must be single-threaded (the helper is a fork of it).
  bool ArmTeardownHelper();
  bool PrepareDetachedTeardown() override { return ArmTeardownHelper(); }
  // Kills init and leaves the rest to the armed helper (arming it now if need be); afterwards this
  // object owns nothing. False (nothing changed) when there is no helper.
  bool DetachTeardown() override;

  // Run by the teardown helper once this box is gone (the backend's sweep of stale groups).
  void set_after_teardown(std::function<void()> fn) { after_teardown_ = std::move(fn); }

  pid_t init_pid() const { return process_->pid(); }
  bool Ended() override { return !detached_ && process_ && process_->TryReap().has_value(); }
  // What must outlive this box (a fork server's boxes keep their server), released last.
  void KeepAlive(std::shared_ptr<void> what) { keep_alive_ = std::move(what); }

  // The stored image's in-use mark, held until the box is gone (the store will not remove it).
  void HoldImage(image::ImageLease lease) { image_lease_ = std::move(lease); }

 private:
  void DrainDiagnostics();

  std::shared_ptr<void> keep_alive_;  // released last of all
  image::ImageLease image_lease_;  // released last, once init and its namespace are gone
  std::string id_;
  std::unique_ptr<BoxCgroups> cgroups_;  // destroyed after the process (declared first)
  std::unique_ptr<ChildProcess> process_;
  UniqueFd stream_;
  UniqueFd diag_;
  std::string diag_text_;
  pid_t teardown_helper_ = -1;  // ArmTeardownHelper's process: it removes the cgroups
  bool detached_ = false;       // DetachTeardown() handed everything to the helper
  std::function<void()> after_teardown_;
  std::unique_ptr<egress::EgressProxy> proxy_;  // stopped first: it serves a socket of the box's
};

}  // namespace lsb::native
