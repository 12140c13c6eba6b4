// What a pull shows while it runs: on a terminal, one line per layer (bytes so far / size, state)
// and a total line, redrawn in place at most ten times a second; elsewhere (a log, a pipe) one
// plain line per finished blob; nothing when quiet. Safe to call from every download thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

namespace lsb::image::registry {

enum class ProgressMode { kQuiet, kPlain, kTerminal };

// "12.3 MiB", "512 B": sizes as the display prints them.
std::string HumanBytes(uint64_t n);

class PullProgress {
 public:
  PullProgress(ProgressMode mode, FILE* out) : mode_(mode), out_(out) {}
  // A line for a blob; returns its id for the calls below.
  int Add(std::string label, uint64_t total);
  void Set(int id, uint64_t done, const char* state);
  void Finish(int id, const char* state);
  // The last redraw (a terminal shows the final numbers).
  void Close();

 private:
  struct Line {
    std::string label;
    uint64_t total = 0;
    uint64_t done = 0;
    std::string state = "waiting";
  };
  void Draw(bool force);  // with mu_ held
  std::string Format(const Line& l) const;

  ProgressMode mode_;
  FILE* out_;
  std::mutex mu_;
  std::vector<Line> lines_;
  int drawn_ = 0;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace lsb::image::registry
