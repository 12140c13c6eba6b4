// A build's events (the daemon's image_build events, docs/api.md), the same on both backends: one
// "started", one "step" per step line (cached, building, built in N ms), then "done" or "failed".
// A BuildReport wraps one Build call: made before it, Done/Failed after; its progress() forwards
// each line to the caller's progress and as a step event. A build that finds every step stored
// (every box start after the first) sends no event at all: "started" and the "cached" lines are
// held until a step is built or the build fails, so the stream carries builds, not box starts.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "policy/policy.h"

namespace lsb {

using BuildEventSink = std::function<void(nlohmann::json event)>;
using BuildProgress = std::function<void(const std::string& line)>;

class BuildReport {
 public:
  BuildReport(BuildEventSink sink, BuildProgress progress, const Policy& policy, std::string backend);
  BuildReport(const BuildReport&) = delete;
  BuildReport& operator=(const BuildReport&) = delete;
  BuildProgress progress();  // valid while this report lives
  void Done(const std::string& image, int steps, int steps_built);
  void Failed(const std::string& error);

 private:
  nlohmann::json Base(const std::string& state) const;
  void Send(nlohmann::json e);
  bool live_ = false;
  std::vector<nlohmann::json> held_;
  BuildEventSink sink_;
  BuildProgress progress_;
  std::string policy_, image_, backend_;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace lsb
