// Prometheus metrics (text exposition format 0.0.4): counters, gauges and histograms with labels,
// declared once with their help text, updated from any thread, rendered on GET /metrics.
//
// Concurrency: one mutex (`mu_`) guards every family; updates are a map lookup and an add, cheap
// next to an execution. Gauges that mirror live state (queue depth, sessions) are set by the
// /metrics route just before Render().
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace lsb::monitor {

using Labels = std::vector<std::pair<std::string, std::string>>;  // in declaration order

enum class MetricType { kCounter, kGauge, kHistogram };

class Metrics {
 public:
  void Declare(const std::string& name, MetricType type, const std::string& help,
               std::vector<double> buckets = {});
  void Inc(const std::string& name, const Labels& labels = {}, double by = 1);
  void Set(const std::string& name, const Labels& labels, double value);
  void Observe(const std::string& name, const Labels& labels, double value);
  // The value of a counter or gauge (0 when never touched); for tests and the dashboard.
  double Get(const std::string& name, const Labels& labels = {}) const;
  std::string Render() const;
  // A label put on every rendered series (the daemon's node, so one Prometheus can scrape a
  // cluster's daemons); the stored series and Get() do not carry it.
  void SetConstantLabel(const std::string& name, const std::string& value);

 private:
  struct Histogram {
    std::vector<uint64_t> counts;  // per bucket, not cumulative
    uint64_t count = 0;
    double sum = 0;
  };
  struct Family {
    MetricType type;
    std::string help;
    std::vector<double> buckets;
    std::map<std::string, double> values;         // rendered label set -> value
    std::map<std::string, Histogram> histograms;  // rendered label set -> histogram
  };
  static std::string Render(const Labels& labels, const std::string& extra = "");

  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
  std::string constant_;  // rendered: name="value", or ""
};

// Label values escaped as the format requires (\\, \", \n).
std::string EscapeLabel(const std::string& v);

}  // namespace lsb::monitor
