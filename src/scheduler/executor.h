// A bounded executor: a fixed set of worker threads runs box work (the runner blocks), behind a
// queue with a bound. Admission is explicit: a full queue or a shut-down executor is an answer
// (the HTTP layer turns them into 429 / 503 with Retry-After), never an unbounded pile-up.
//
// Concurrency: `mu_` guards the queue, the counters and `accepting_`; workers are owned by the
// executor and joined by Shutdown() (or the destructor).
#pragma once

#include <chrono>
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
  // Runs after its task (ran or cancelled), once the task's worker slot counts as free again.
  // Publish a task's result here: whoever is woken by it may submit again at once and must find the
  // room the finished task held (else a client that never has more requests in flight than
  // workers + queue gets a spurious 429).
  using Then = std::function<void()>;

  Executor(size_t workers, size_t queue_limit);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Queues `task` if a worker is free or the queue has room; `then` (optional) after it, see Then.
  Admission Submit(Task task, Then then = {});
  // As Submit, but waits for room instead of answering kQueueFull (work of an admitted batch).
  Admission SubmitWait(Task task, Then then = {});
  // As SubmitWait, but only until `deadline` (kQueueFull then): a burst of session creates waits
  // for room for a bounded time instead of being refused at once (issue 35).
  Admission SubmitWaitUntil(Task task, Then then, std::chrono::steady_clock::time_point deadline);

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
  struct Job {
    Task task;
    Then then;
  };
  void Work();
  bool HasRoom() const { return queue_.size() < queue_limit_ + (threads_.size() - busy_); }

  const size_t queue_limit_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;   // a task was queued, or stopping
  std::condition_variable room_cv_;   // a task left the queue, or stopping
  std::deque<Job> queue_;
  size_t busy_ = 0;
  bool accepting_ = true;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// Runs `fn` on `ex` and waits for its value. nullopt + `*admission` when it was not admitted or was
// cancelled by a shutdown before it ran.
// `submit` is how the task is offered (Submit, SubmitWait, SubmitWaitUntil).
template <typename T, typename SubmitFn>
std::optional<T> RunOnWith(SubmitFn submit, std::function<T()> fn, Admission* admission) {
  // The value is published by the continuation, after the worker's slot is free again: the caller
  // answers its client only then, so the client's next request finds that room.
  auto value = std::make_shared<std::optional<T>>();
  auto promise = std::make_shared<std::promise<std::optional<T>>>();
  auto future = promise->get_future();
  Executor::Task task = [value, fn = std::move(fn)](bool cancelled) {
    if (!cancelled) value->emplace(fn());
  };
  Executor::Then then = [value, promise] { promise->set_value(std::move(*value)); };
  *admission = submit(std::move(task), std::move(then));
  if (*admission != Admission::kAccepted) return std::nullopt;
  auto v = future.get();
  if (!v) *admission = Admission::kShuttingDown;
  return v;
}

template <typename T>
std::optional<T> RunOn(Executor& ex, std::function<T()> fn, Admission* admission, bool wait_for_room = false) {
  auto submit = [&](Executor::Task t, Executor::Then then) {
    return wait_for_room ? ex.SubmitWait(std::move(t), std::move(then)) : ex.Submit(std::move(t), std::move(then));
  };
  return RunOnWith<T>(submit, std::move(fn), admission);
}

// As RunOn, waiting for room until `deadline`.
template <typename T>
std::optional<T> RunOnUntil(Executor& ex, std::function<T()> fn, Admission* admission,
                            std::chrono::steady_clock::time_point deadline) {
  auto submit = [&](Executor::Task t, Executor::Then then) {
    return ex.SubmitWaitUntil(std::move(t), std::move(then), deadline);
  };
  return RunOnWith<T>(submit, std::move(fn), admission);
}

}  // namespace lsb::sched
