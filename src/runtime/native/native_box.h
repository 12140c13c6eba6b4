// One native box: owns init (and with it the pid namespace), the host end of its stream, the read
// end of its stderr and its cgroups. Destruction order: kill init, reap it (the kernel has then
// killed every process of the namespace), remove the cgroups.
#pragma once

#include <memory>
#include <string>

#include "base/unique_fd.h"
#include "runtime/backend.h"
#include "runtime/native/box_cgroup.h"
#include "runtime/native/launcher.h"

namespace lsb::native {

class NativeBox : public Box {
 public:
  NativeBox(std::string id, std::unique_ptr<BoxCgroups> cgroups, LaunchedInit init);
  ~NativeBox() override;

  int stream_fd() const override { return stream_.get(); }
  BoxVerdict Verdict() override;
  void Kill() override;
  std::string id() const override { return id_; }
  std::string Diagnostics() override;
  void BeginRun() override {
    if (cgroups_) cgroups_->ResetPeak();
  }

  std::optional<BoxUsage> Usage() override;

  // For `llm-sandbox run`, which exits right after its one run: kills init now and hands the rest
  // of the teardown (waiting until init and every process of the box are gone, then removing the
  // cgroups, killing whatever is left in them first) to a detached helper process, so the CLI does
  // not wait for the kernel's namespace teardown. Returns false (and changes nothing: the
  // destructor then tears down as usual) when the helper cannot be started. The caller must be
  // single-threaded (the helper is a fork of it). Afterwards this object owns nothing.
  bool DetachTeardown();

  pid_t init_pid() const { return process_->pid(); }

 private:
  void DrainDiagnostics();

  std::string id_;
  std::unique_ptr<BoxCgroups> cgroups_;  // destroyed after the process (declared first)
  std::unique_ptr<ChildProcess> process_;
  UniqueFd stream_;
  UniqueFd diag_;
  std::string diag_text_;
};

}  // namespace lsb::native
