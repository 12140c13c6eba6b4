#include "scheduler/executor.h"

namespace lsb::sched {

Executor::Executor(size_t workers, size_t queue_limit) : queue_limit_(queue_limit) {
  if (workers == 0) workers = 1;
  threads_.reserve(workers);
  for (size_t i = 0; i < workers; ++i) threads_.emplace_back([this] { Work(); });
}

Executor::~Executor() { Shutdown(); }

Admission Executor::Submit(Task task) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!accepting_) return Admission::kShuttingDown;
  if (!HasRoom()) return Admission::kQueueFull;
  queue_.push_back(std::move(task));
  work_cv_.notify_one();
  return Admission::kAccepted;
}

Admission Executor::SubmitWait(Task task) {
  std::unique_lock<std::mutex> lock(mu_);
  room_cv_.wait(lock, [this] { return !accepting_ || HasRoom(); });
  if (!accepting_) return Admission::kShuttingDown;
  queue_.push_back(std::move(task));
  work_cv_.notify_one();
  return Admission::kAccepted;
}

void Executor::StopAccepting() {
  std::lock_guard<std::mutex> lock(mu_);
  accepting_ = false;
  room_cv_.notify_all();
}

void Executor::Shutdown() {
  std::deque<Task> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && threads_.empty()) return;
    accepting_ = false;
    stopping_ = true;
    dropped.swap(queue_);
    work_cv_.notify_all();
    room_cv_.notify_all();
  }
  for (auto& t : dropped) t(true);  // outside the lock: a task's callback may take other locks
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  std::lock_guard<std::mutex> lock(mu_);
  threads_.clear();
}

size_t Executor::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return busy_;
}

size_t Executor::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

void Executor::Work() {
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
      ++busy_;
    }
    task(false);
    {
      std::lock_guard<std::mutex> lock(mu_);
      --busy_;
    }
    room_cv_.notify_one();
  }
}

}  // namespace lsb::sched
