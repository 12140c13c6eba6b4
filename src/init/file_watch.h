// The box's file watch (protocol/file_ops.h kWatch): an inotify watcher child of init, confined as
// the file worker is (file_worker.h), writes kFileEvent frames into a pipe; init polls that pipe
// beside its stream (Stream::SetSide, and the run loop's poll set) and queues each event it can
// (Stream::Offer: bounded; what is dropped is told as one "overflow" event). One watch per box; a
// new kWatch replaces it. A run's end kills every process of the box, the watcher too: Revive
// starts it again.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "init/file_worker.h"
#include "init/stream.h"
#include "protocol/file_ops.h"

namespace lsb::init {

class FileWatch : public SideInput {
 public:
  explicit FileWatch(Stream& stream) : stream_(stream) {}
  ~FileWatch() override { Stop(); }

  // Watches `spec` as `who` from now on (an error is told as an "end" event, never fatal).
  void Start(protocol::WatchSpec spec, const WorkerIdentity& who);
  // No watch any more; the watcher is killed and reaped.
  void Stop();
  // After a run: the watcher again when a watch is on and it is gone.
  void Revive(const WorkerIdentity& who);

  int fd() const override { return pipe_.get(); }
  void OnReadable() override;

 private:
  void Event(const std::string& path, const std::string& op);
  void Reap();

  Stream& stream_;
  std::optional<protocol::WatchSpec> spec_;
  pid_t pid_ = -1;
  UniqueFd pipe_;
  protocol::FrameDecoder decoder_;
  uint64_t dropped_ = 0;
};

// A kWatch (start or replace) or kUnwatch frame; a bad WatchSpec is told as an "end" event.
void ServeWatchFrame(FileWatch& watch, const protocol::Frame& frame, const WorkerIdentity& who);

// The watcher's own loop, in the child (after fork): never returns.
[[noreturn]] void WatcherMain(const protocol::WatchSpec& spec, const WorkerIdentity& who, int out);

}  // namespace lsb::init
