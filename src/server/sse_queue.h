// The hand-off between a run and the HTTP client of its event stream (POST /v1/execute?stream=true),
// so that neither waits for the other (docs/security.md, class 5). The run's callbacks Push() and return
// at once; the connection thread Pop()s and writes to the socket at the client's pace. The queue
// holds at most `max_bytes` of encoded events: past it, events are dropped and counted, and the
// client gets one "dropped" event saying how many before the next one it does receive. The last
// event (the result) is always queued. A client that stops reading therefore costs at most
// `max_bytes` and never holds up the run, its box or its timeout.
//
// Concurrency: any number of pushers, one popper; `mu_` guards everything.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>

namespace lsb::server {

class SseQueue {
 public:
  static constexpr size_t kDefaultMaxBytes = 4 << 20;
  explicit SseQueue(size_t max_bytes = kDefaultMaxBytes) : max_bytes_(max_bytes) {}

  // Queues one encoded event; false (and counted) when it does not fit.
  bool Push(std::string event);
  // Queues the last event whatever the queue holds, and ends the stream.
  void Finish(std::string last_event);
  // Ends the stream with nothing more (the run failed before any event).
  void Close();
  // The next chunk to write (a "dropped" note first when events were dropped before it);
  // nullopt once the stream is finished and empty.
  std::optional<std::string> Pop();

  bool ever_pushed() const;
  uint64_t dropped_events() const;

 private:
  const size_t max_bytes_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  size_t bytes_ = 0;
  uint64_t dropped_ = 0, dropped_bytes_ = 0, dropped_total_ = 0;
  bool ever_pushed_ = false;
  bool closed_ = false;
};

}  // namespace lsb::server
