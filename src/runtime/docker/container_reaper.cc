#include "runtime/docker/container_reaper.h"

#include <algorithm>
#include <cstdio>

namespace lsb::docker {

ContainerReaper::ContainerReaper(std::shared_ptr<const EngineClient> engine) : engine_(std::move(engine)) {
  thread_ = std::thread([this] { Loop(); });
}

ContainerReaper::~ContainerReaper() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();  // Loop returns once the queue is empty and each retry had its last attempt
}

void ContainerReaper::Remove(std::string container_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(container_id));
  }
  cv_.notify_one();
}

size_t ContainerReaper::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size() + retry_.size() + (busy_ ? 1 : 0);
}

namespace {
constexpr std::chrono::seconds kFirstRetry{1};
constexpr std::chrono::seconds kMaxRetryDelay{30};
constexpr std::chrono::minutes kGiveUpAfter{10};
constexpr std::chrono::milliseconds kStopWait{2000};
constexpr int kMaxSlowStops = 3;
}  // namespace

void ContainerReaper::RemoveOne(std::string id, const Retry* previous) {
  // The box closed its attach connection, so init has read EOF and is exiting (StdinOnce): let the
  // container stop by itself before removing it. A forced removal of a running container costs
  // the engine a kill through the runtime (one more runc process per box), which on 2 cores
  // competed with the executions. A container that does not stop in time (an engine
  // that keeps stdin open, a wedged init) is killed by the forced removal as before, and after
  // kMaxSlowStops such in a row the wait is skipped for good.
  if (!previous && slow_stops_ < kMaxSlowStops) {
    auto stopped = engine_->WaitNotRunning(id, kStopWait);
    if (stopped.ok()) slow_stops_ = *stopped ? 0 : slow_stops_ + 1;
  }
  auto st = engine_->RemoveContainer(id, /*force=*/true);
  // The engine answered but refused: a container caught between running and stopped (Podman:
  // "could not be stopped ... container state improper"). Such races settle in moments, so two
  // quick tries come before the slow backoff (and before giving up at shutdown). An engine that
  // does not answer at all (sys_errno set: refused, no socket, timed out) goes straight to backoff.
  for (int quick = 0; quick < 2 && !st.ok() && st.error().sys_errno == 0; ++quick) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    st = engine_->RemoveContainer(id, /*force=*/true);
  }
  if (st.ok()) return;
  auto now = Clock::now();
  Retry r{std::move(id), now + kFirstRetry, now, kFirstRetry};
  if (previous) {
    r.first_failure = previous->first_failure;
    r.delay = std::min(previous->delay * 2, kMaxRetryDelay);
    r.next = now + r.delay;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_ || now - r.first_failure >= kGiveUpAfter) {
    std::fprintf(stderr, "llm-sandbox: %s (it will be removed as an orphan at the next start)\n",
                 st.error().message.c_str());
    return;
  }
  // Said once per container, not at every retry.
  if (!previous)
    std::fprintf(stderr, "llm-sandbox: %s (retrying in the background)\n", st.error().message.c_str());
  auto at = std::upper_bound(retry_.begin(), retry_.end(), r.next,
                             [](Clock::time_point t, const Retry& x) { return t < x.next; });
  retry_.insert(at, std::move(r));
}

void ContainerReaper::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    auto due = [this] { return !retry_.empty() && retry_.front().next <= Clock::now(); };
    if (retry_.empty()) {
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    } else {
      cv_.wait_until(lock, retry_.front().next, [&] { return stop_ || !queue_.empty() || due(); });
    }
    if (!queue_.empty()) {
      std::string id = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      RemoveOne(std::move(id), nullptr);
      lock.lock();
    } else if (!retry_.empty() && (stop_ || due())) {
      // At shutdown every waiting retry gets its last attempt now.
      Retry r = std::move(retry_.front());
      retry_.pop_front();
      busy_ = true;
      lock.unlock();
      RemoveOne(r.id, &r);
      lock.lock();
    } else if (stop_) {
      break;  // nothing queued, nothing to retry
    }
    busy_ = false;
  }
}

}  // namespace lsb::docker
