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

// One blob's transfer as it stands, for a caller that reports pulls elsewhere (the image store's
// puller, to the daemon's event stream): what PullOptions::on_blob receives.
struct BlobProgress {
  std::string digest;
  bool layer = true;  // false: the image config
  uint64_t done = 0, total = 0;
  std::string state;  // "downloading" | "done" | "already there" | "failed"
};

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
