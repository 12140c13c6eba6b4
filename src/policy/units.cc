#include "policy/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

namespace lsb::units {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Reads a non-negative decimal number ("12", "0.5", ".5") from the front of `s`, advancing it.
// Signs and exponents are not accepted: people do not write "1e9" bytes, and a typo should fail.
std::optional<double> TakeNumber(std::string_view& s, bool* had_fraction) {
  size_t i = 0;
  bool digits = false, dot = false;
  while (i < s.size()) {
    char c = s[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits = true;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
    ++i;
  }
  if (!digits) return std::nullopt;
  std::string num(s.substr(0, i));
  s.remove_prefix(i);
  if (had_fraction) *had_fraction = dot;
  return std::strtod(num.c_str(), nullptr);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Error NotA(std::string_view what, std::string_view text, std::string_view examples) {
  return Error{"'" + std::string(text) + "' is not " + std::string(what) + " (expected " +
               std::string(examples) + ")"};
}

constexpr std::string_view kSizeExamples = "a number of bytes or a size such as 512k, 256M, 256Mi, 1G";
// Every spelling ParseBytes takes, for its errors.
constexpr std::string_view kSizeForms =
    "a whole number of bytes, or a number directly followed by k, M, G or T (any case), optionally "
    "then i and/or B, all powers of 1024: 256M = 256Mi = 256MiB = 256MB";
constexpr std::string_view kDurationExamples = "seconds such as 30, or 500ms, 30s, 2m, 1h, 1m30s";

}  // namespace

Result<uint64_t> ParseBytes(std::string_view raw) {
  std::string_view s = Trim(raw);
  if (s.empty()) return Error{"an empty value is not a size (expected " + std::string(kSizeExamples) + ")"};
  if (s.front() == '-') return Error{"'" + std::string(s) + "' is negative; a size is at least 0"};
  std::string_view rest = s;
  bool fraction = false;
  auto number = TakeNumber(rest, &fraction);
  if (!number) return NotA("a size", s, kSizeExamples);
  // "256 MB" was read as 256MiB without a word; a space is refused so a size is written one way.
  if (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front()))) {
    std::string unit(Trim(rest));
    return Error{"'" + std::string(s) + "' has a space between the number and its unit; write '" +
                 std::string(s.substr(0, s.size() - rest.size())) + unit + "' (accepted: " +
                 std::string(kSizeForms) + ")"};
  }
  std::string suffix = Lower(rest);
  double mult = 0;
  if (suffix.empty() || suffix == "b") {
    mult = 1;
  } else {
    static constexpr std::string_view kPrefixes = "kmgt";
    size_t p = kPrefixes.find(suffix[0]);
    std::string tail = suffix.substr(1);
    if (p != std::string_view::npos && (tail.empty() || tail == "i" || tail == "b" || tail == "ib")) {
      mult = std::pow(1024.0, static_cast<double>(p + 1));
    }
  }
  if (mult == 0) {
    return Error{"'" + std::string(s) + "' has an unknown size unit '" + std::string(rest) + "' (accepted: " +
                 std::string(kSizeForms) + ")"};
  }
  if (fraction && mult == 1) {
    return Error{"'" + std::string(s) + "' is a fraction of a byte; use a unit (1.5M) or whole bytes"};
  }
  double bytes = std::floor(*number * mult);
  if (bytes >= 18446744073709551615.0) return Error{"'" + std::string(s) + "' is too large"};
  return static_cast<uint64_t>(bytes);
}

Result<double> ParseCpu(std::string_view raw) {
  std::string_view s = Trim(raw);
  if (s.empty()) return Error{"an empty value is not a CPU amount (expected cores such as 0.5 or 2, or 500m)"};
  if (s.front() == '-') return Error{"'" + std::string(s) + "' is negative; CPU is a positive number of cores"};
  std::string_view rest = s;
  auto number = TakeNumber(rest, nullptr);
  if (!number) return NotA("a CPU amount", s, "cores such as 0.5 or 2, or millicores such as 500m");
  std::string suffix = Lower(Trim(rest));
  if (suffix.empty()) return *number;
  if (suffix == "m") return *number / 1000.0;
  return Error{"'" + std::string(s) + "' has an unknown CPU unit '" + std::string(Trim(rest)) +
               "' (known: none = cores, m = millicores)"};
}

Result<uint64_t> ParseDurationMs(std::string_view raw) {
  std::string_view s = Trim(raw);
  if (s.empty()) return Error{"an empty value is not a duration (expected " + std::string(kDurationExamples) + ")"};
  if (s.front() == '-') return Error{"'" + std::string(s) + "' is negative; a duration is positive"};
  std::string_view rest = s;
  double total_ms = 0;
  bool first = true;
  while (!rest.empty()) {
    auto number = TakeNumber(rest, nullptr);
    if (!number) return NotA("a duration", s, kDurationExamples);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);  // "30 s"
    size_t u = 0;
    while (u < rest.size() && std::isalpha(static_cast<unsigned char>(rest[u]))) ++u;
    std::string unit = Lower(rest.substr(0, u));
    rest.remove_prefix(u);
    if (unit.empty()) {
      if (first && Trim(rest).empty()) {  // a bare number: seconds
        total_ms = *number * 1000.0;
        break;
      }
      return NotA("a duration", s, kDurationExamples);
    }
    double scale = unit == "ms" ? 1 : unit == "s" ? 1000 : unit == "m" ? 60000 : unit == "h" ? 3600000 : 0;
    if (scale == 0) {
      return Error{"'" + std::string(s) + "' has an unknown time unit '" + unit + "' (known: ms, s, m, h)"};
    }
    total_ms += *number * scale;
    first = false;
  }
  if (total_ms >= 1e15) return Error{"'" + std::string(s) + "' is too long"};
  return static_cast<uint64_t>(std::llround(total_ms));
}

std::string FormatBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"Ki", "Mi", "Gi", "Ti"};
  if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  double v = static_cast<double>(bytes);
  int u = -1;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  char buf[48];
  if (v == std::floor(v)) {
    std::snprintf(buf, sizeof buf, "%.0f%s", v, kUnits[u]);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f%s", v, kUnits[u]);
    // "1.50Gi" -> "1.5Gi": trailing zeros say nothing.
    std::string out = buf;
    size_t unit_at = out.size() - 2;
    std::string num = out.substr(0, unit_at);
    while (num.back() == '0') num.pop_back();
    return num + out.substr(unit_at);
  }
  return buf;
}

std::string FormatDurationMs(uint64_t ms) {
  if (ms == 0) return "0s";
  std::string out;
  uint64_t h = ms / 3600000, m = (ms / 60000) % 60, s = (ms / 1000) % 60, rest = ms % 1000;
  if (h) out += std::to_string(h) + "h";
  if (m) out += std::to_string(m) + "m";
  if (s) out += std::to_string(s) + "s";
  if (rest) out += std::to_string(rest) + "ms";
  return out;
}

std::string FormatCpu(double cores) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", cores);
  std::string out = buf;
  while (out.back() == '0') out.pop_back();
  if (out.back() == '.') out.pop_back();
  return out;
}

}  // namespace lsb::units
