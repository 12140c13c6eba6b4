#include "image/registry_progress.h"

namespace lsb::image::registry {

std::string HumanBytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(n));
  else std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

int PullProgress::Add(std::string label, uint64_t total) {
  std::lock_guard<std::mutex> lock(mu_);
  lines_.push_back(Line{std::move(label), total, 0, "waiting"});
  return static_cast<int>(lines_.size()) - 1;
}

void PullProgress::Set(int id, uint64_t done, const char* state) {
  if (mode_ != ProgressMode::kTerminal) return;
  std::lock_guard<std::mutex> lock(mu_);
  lines_[id].done = done;
  lines_[id].state = state;
  Draw(false);
}

void PullProgress::Finish(int id, const char* state) {
  std::lock_guard<std::mutex> lock(mu_);
  Line& l = lines_[id];
  l.done = l.total;
  l.state = state;
  if (mode_ == ProgressMode::kPlain) {
    std::fprintf(out_, "%s\n", Format(l).c_str());
    std::fflush(out_);
  } else if (mode_ == ProgressMode::kTerminal) {
    Draw(true);
  }
}

void PullProgress::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  if (mode_ == ProgressMode::kTerminal) Draw(true);
}

std::string PullProgress::Format(const Line& l) const {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-20s %10s / %-10s %s", l.label.c_str(), HumanBytes(l.done).c_str(),
                HumanBytes(l.total).c_str(), l.state.c_str());
  return buf;
}

void PullProgress::Draw(bool force) {
  auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  std::string out;
  if (drawn_ > 0) out += "\x1b[" + std::to_string(drawn_) + "A";  // back to the first line
  uint64_t done = 0, total = 0;
  for (const auto& l : lines_) {
    out += "\r\x1b[2K" + Format(l) + "\n";
    done += l.done;
    total += l.total;
  }
  Line sum{"total", total, done, ""};
  out += "\r\x1b[2K" + Format(sum) + "\n";
  drawn_ = static_cast<int>(lines_.size()) + 1;
  std::fputs(out.c_str(), out_);
  std::fflush(out_);
}

}  // namespace lsb::image::registry
