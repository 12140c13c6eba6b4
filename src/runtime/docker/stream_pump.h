// Turns a hijacked Docker attach connection into the plain byte stream the runner expects: a
// socketpair whose far end carries exactly init's protocol bytes (attach stdout), while attach
// stderr (init's diagnostics) is kept aside. One thread per box moves bytes both ways with
// non-blocking fds and bounded buffers, so neither side can wedge the other.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>

#include "base/result.h"
#include "base/unique_fd.h"

namespace lsb::docker {

class StreamPump {
 public:
  // `attach`: the hijacked connection; `initial`: bytes that arrived with the HTTP headers.
  static Result<std::unique_ptr<StreamPump>> Start(UniqueFd attach, std::string initial, std::string label);
  ~StreamPump();  // stops the thread; closes both fds
  StreamPump(const StreamPump&) = delete;
  StreamPump& operator=(const StreamPump&) = delete;

  // The runner's end: read frames from init, write frames to init.
  int fd() const { return runner_end_.get(); }
  // False once the engine closed the attach stream (the container died) or the stream broke.
  bool alive() const { return alive_.load(); }
  // init's stderr so far (the last 64 KiB), and why the pump stopped, if it did.
  std::string Diagnostics() const;

 private:
  StreamPump() = default;
  void Run();
  void AppendDiag(std::string_view s);

  UniqueFd attach_;
  UniqueFd pump_end_;
  UniqueFd runner_end_;
  UniqueFd wake_read_, wake_write_;
  std::string initial_;
  std::string label_;
  std::atomic<bool> alive_{true};
  mutable std::mutex mu_;
  std::string diag_;
  std::thread thread_;
};

}  // namespace lsb::docker
