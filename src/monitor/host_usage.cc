#include "monitor/host_usage.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace lsb::monitor {
namespace {

using nlohmann::json;

std::optional<std::string> ReadSmallFile(const char* path) {
  std::ifstream f(path);
  if (!f) return std::nullopt;
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// "MemTotal:       16314124 kB" -> bytes.
std::optional<uint64_t> MeminfoBytes(const std::string& text, const std::string& key) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    return static_cast<uint64_t>(std::strtoull(line.c_str() + key.size() + 1, nullptr, 10)) * 1024;
  }
  return std::nullopt;
}

json Nullable(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

}  // namespace

std::optional<ProcessUsage> ReadProcessUsage() {
  ProcessUsage u;
  struct rusage ru {};
  if (::getrusage(RUSAGE_SELF, &ru) != 0) return std::nullopt;
  auto ns = [](const timeval& t) { return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_usec) * 1000ull; };
  u.cpu_ns = ns(ru.ru_utime) + ns(ru.ru_stime);
  auto statm = ReadSmallFile("/proc/self/statm");
  unsigned long long size = 0, resident = 0;
  if (statm && std::sscanf(statm->c_str(), "%llu %llu", &size, &resident) == 2)
    u.rss_bytes = resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  if (auto status = ReadSmallFile("/proc/self/status")) {
    size_t at = status->find("\nThreads:");
    if (at != std::string::npos) u.threads = std::strtoull(status->c_str() + at + 9, nullptr, 10);
  }
  return u;
}

std::optional<HostUsage> ReadHostUsage() {
  HostUsage h;
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  h.cpus = n > 0 ? static_cast<unsigned>(n) : 1;
  auto stat = ReadSmallFile("/proc/stat");
  if (!stat || stat->rfind("cpu ", 0) != 0) return std::nullopt;
  // cpu  user nice system idle iowait irq softirq steal (guest time is inside user already)
  unsigned long long v[8] = {};
  if (std::sscanf(stat->c_str() + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
                  &v[5], &v[6], &v[7]) < 4)
    return std::nullopt;
  for (auto x : v) h.total_ticks += x;
  h.busy_ticks = h.total_ticks - v[3] - v[4];
  if (auto mem = ReadSmallFile("/proc/meminfo")) {
    h.memory_total_bytes = MeminfoBytes(*mem, "MemTotal").value_or(0);
    h.memory_available_bytes = MeminfoBytes(*mem, "MemAvailable").value_or(0);
  }
  if (auto load = ReadSmallFile("/proc/loadavg")) h.load1 = std::strtod(load->c_str(), nullptr);
  return h;
}

json UsageSampler::Sample() {
  auto proc = ReadProcessUsage();
  auto host = ReadHostUsage();
  auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  if (!last_at_ || now - *last_at_ >= min_interval_) {
    if (last_at_ && proc && last_proc_ && proc->cpu_ns >= last_proc_->cpu_ns) {
      double wall_ns = std::chrono::duration<double, std::nano>(now - *last_at_).count();
      daemon_pct_ = 100.0 * static_cast<double>(proc->cpu_ns - last_proc_->cpu_ns) / wall_ns;
    }
    if (host && last_host_ && host->total_ticks > last_host_->total_ticks && host->busy_ticks >= last_host_->busy_ticks)
      host_pct_ = 100.0 * static_cast<double>(host->busy_ticks - last_host_->busy_ticks) /
                  static_cast<double>(host->total_ticks - last_host_->total_ticks);
    last_at_ = now;
    last_proc_ = proc;
    last_host_ = host;
  }
  json daemon = {{"pid", ::getpid()}, {"cpu_percent", Nullable(daemon_pct_)}};
  daemon["cpu_seconds"] = proc ? json(static_cast<double>(proc->cpu_ns) / 1e9) : json(nullptr);
  daemon["rss_bytes"] = proc ? json(proc->rss_bytes) : json(nullptr);
  daemon["threads"] = proc ? json(proc->threads) : json(nullptr);
  json h = {{"cpu_percent", Nullable(host_pct_)}};
  h["cpus"] = host ? json(host->cpus) : json(nullptr);
  h["load1"] = host ? json(host->load1) : json(nullptr);
  h["memory_total_bytes"] = host ? json(host->memory_total_bytes) : json(nullptr);
  h["memory_available_bytes"] = host ? json(host->memory_available_bytes) : json(nullptr);
  return {{"daemon", daemon}, {"host", h}};
}

}  // namespace lsb::monitor
