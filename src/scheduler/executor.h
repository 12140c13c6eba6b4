// A bounded executor: a fixed set of worker threads runs box work (the runner blocks), behind a
// queue with a bound. Admission is explicit: a full queue or a shut-down executor is an answer
// (the HTTP layer turns them into 429 / 503 with Retry-After), never an unbounded pile-up.
//
// Concurrency: `mu_` guards the queue, the counters and `accepting_`; workers are owned by the
// executor and joined by Shutdown() (or the destructor).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace lsb::sched {

enum class Admission { kAccepted, kQueueFull, kShuttingDown };

class Executor {
 public:
  // A task gets `cancelled` = true when shutdown dropped it from the queue before it ran.
  using Task = std::function<void(bool cancelled)>;

  Executor(size_t workers, size_t queue_limit);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Queues `task` if a worker is free or the queue has room.
  Admission Submit(Task task);
  // As Submit, but waits for room instead of answering kQueueFull (work of an admitted batch).
  Admission SubmitWait(Task task);

  // Stops accepting; drops queued tasks (each is called with cancelled = true); waits until the
  // running ones finished, then joins the workers. Idempotent.
  void Shutdown();
  // Stops accepting without waiting (the first step of a graceful stop).
  void StopAccepting();

  size_t running() const;
  size_t queued() const;
  size_t workers() const { return threads_.size(); }
  size_t queue_limit() const { return queue_limit_; }

 private:
  void Work();
  bool HasRoom() const { return queue_.size() < queue_limit_ + (threads_.size() - busy_); }

  const size_t queue_limit_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;   // a task was queued, or stopping
  std::condition_variable room_cv_;   // a task left the queue, or stopping
  std::deque<Task> queue_;
  size_t busy_ = 0;
  bool accepting_ = true;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// Runs `fn` on `ex` and waits for its value. nullopt + `*admission` when it was not admitted or was
// cancelled by a shutdown before it ran.
template <typename T>
std::optional<T> RunOn(Executor& ex, std::function<T()> fn, Admission* admission, bool wait_for_room = false) {
  auto promise = std::make_shared<std::promise<std::optional<T>>>();
  auto future = promise->get_future();
  Executor::Task task = [promise, fn = std::move(fn)](bool cancelled) {
    if (cancelled) {
      promise->set_value(std::nullopt);
      return;
    }
    promise->set_value(fn());
  };
  *admission = wait_for_room ? ex.SubmitWait(std::move(task)) : ex.Submit(std::move(task));
  if (*admission != Admission::kAccepted) return std::nullopt;
  auto v = future.get();
  if (!v) *admission = Admission::kShuttingDown;
  return v;
}

}  // namespace lsb::sched
