#include "monitor/metrics.h"

#include <cmath>
#include <cstdio>

namespace lsb::monitor {
namespace {

std::string Number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

const char* TypeName(MetricType t) {
  switch (t) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
  }
  return "untyped";
}

}  // namespace

std::string EscapeLabel(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string Metrics::Render(const Labels& labels, const std::string& extra) {
  if (labels.empty() && extra.empty()) return "";
  std::string s = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    s += (first ? "" : ",") + k + "=\"" + EscapeLabel(v) + "\"";
    first = false;
  }
  if (!extra.empty()) s += (first ? "" : ",") + extra;
  return s + "}";
}

void Metrics::Declare(const std::string& name, MetricType type, const std::string& help,
                      std::vector<double> buckets) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = families_[name];
  f.type = type;
  f.help = help;
  f.buckets = std::move(buckets);
}

void Metrics::Inc(const std::string& name, const Labels& labels, double by) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return;
  it->second.values[Render(labels)] += by;
}

void Metrics::Set(const std::string& name, const Labels& labels, double value) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return;
  it->second.values[Render(labels)] = value;
}

void Metrics::Observe(const std::string& name, const Labels& labels, double value) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end() || it->second.type != MetricType::kHistogram) return;
  Family& f = it->second;
  Histogram& h = f.histograms[Render(labels)];
  if (h.counts.empty()) h.counts.assign(f.buckets.size(), 0);
  for (size_t i = 0; i < f.buckets.size(); ++i)
    if (value <= f.buckets[i]) {
      ++h.counts[i];
      break;
    }
  ++h.count;
  h.sum += value;
}

double Metrics::Get(const std::string& name, const Labels& labels) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return 0;
  auto v = it->second.values.find(Render(labels));
  return v == it->second.values.end() ? 0 : v->second;
}

void Metrics::SetConstantLabel(const std::string& name, const std::string& value) {
  std::lock_guard<std::mutex> lock(mu_);
  constant_ = name + "=\"" + EscapeLabel(value) + "\"";
}

std::string Metrics::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  // A stored label set ("" or "{a="x"}") with the constant label first.
  auto with_constant = [this](const std::string& labels) -> std::string {
    if (constant_.empty()) return labels;
    return labels.empty() ? "{" + constant_ + "}" : "{" + constant_ + "," + labels.substr(1);
  };
  std::string out;
  for (const auto& [name, f] : families_) {
    out += "# HELP " + name + " " + f.help + "\n";
    out += "# TYPE " + name + " " + TypeName(f.type) + "\n";
    if (f.type != MetricType::kHistogram) {
      if (f.values.empty() && f.type == MetricType::kGauge) out += name + with_constant("") + " 0\n";
      for (const auto& [stored, v] : f.values) out += name + with_constant(stored) + " " + Number(v) + "\n";
      continue;
    }
    for (const auto& [stored, h] : f.histograms) {
      const std::string labels = with_constant(stored);
      // The rendered label set is "{a="x"}" or ""; bucket lines add le= to it.
      std::string inner = labels.empty() ? "" : labels.substr(1, labels.size() - 2);
      auto with_le = [&](const std::string& le) {
        return "{" + inner + (inner.empty() ? "" : ",") + "le=\"" + le + "\"}";
      };
      uint64_t cumulative = 0;
      for (size_t i = 0; i < f.buckets.size(); ++i) {
        cumulative += h.counts[i];
        out += name + "_bucket" + with_le(Number(f.buckets[i])) + " " + std::to_string(cumulative) + "\n";
      }
      out += name + "_bucket" + with_le("+Inf") + " " + std::to_string(h.count) + "\n";
      out += name + "_sum" + labels + " " + Number(h.sum) + "\n";
      out += name + "_count" + labels + " " + std::to_string(h.count) + "\n";
    }
  }
  return out;
}

}  // namespace lsb::monitor
