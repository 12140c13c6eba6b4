#include "runtime/build_events.h"

namespace lsb {

BuildReport::BuildReport(BuildEventSink sink, BuildProgress progress, const Policy& policy, std::string backend)
    : sink_(std::move(sink)), progress_(std::move(progress)), policy_(policy.name), image_(policy.image),
      backend_(std::move(backend)), started_(std::chrono::steady_clock::now()) {
  if (sink_) held_.push_back(Base("started"));
}

void BuildReport::Send(nlohmann::json e) {
  if (!sink_) return;
  if (!live_) {
    held_.push_back(std::move(e));
    return;
  }
  sink_(std::move(e));
}

nlohmann::json BuildReport::Base(const std::string& state) const {
  return {{"policy", policy_}, {"base", image_}, {"backend", backend_}, {"state", state},
          {"elapsed_ms", std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started_).count()}};
}

BuildProgress BuildReport::progress() {
  return [this](const std::string& line) {
    if (progress_) progress_(line);
    if (!sink_) return;
    nlohmann::json e = Base("step");
    e["line"] = line.substr(0, 4096);
    if (!live_ && line.size() >= 10 && line.compare(line.size() - 10, 10, ": building") == 0) {
      live_ = true;  // something is built: what was held goes out first
      for (auto& h : held_) sink_(std::move(h));
      held_.clear();
    }
    Send(std::move(e));
  };
}

void BuildReport::Done(const std::string& image, int steps, int steps_built) {
  if (!sink_ || !live_) return;  // all cached: nothing happened worth an event
  nlohmann::json e = Base("done");
  e["image"] = image;
  e["steps"] = steps;
  e["steps_built"] = steps_built;
  sink_(std::move(e));
}

void BuildReport::Failed(const std::string& error) {
  if (!sink_) return;
  live_ = true;
  for (auto& h : held_) sink_(std::move(h));
  held_.clear();
  nlohmann::json e = Base("failed");
  // The step's output tail is in the message (bounded by the builders to ~2 KB).
  e["error"] = error.substr(0, 8192);
  sink_(std::move(e));
}

}  // namespace lsb
