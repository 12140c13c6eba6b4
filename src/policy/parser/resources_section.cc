// resources: the box's limits, each with its unit and its smallest sensible value.
#include <cstdint>
#include <string>

#include "policy/parser/section_context.h"
#include "policy/units.h"
#include "protocol/messages.h"

namespace lsb::policy_parser {

void SectionParser::Resources(const Field& f) {
  const std::string key = f.key.Scalar();
  if (!f.value.IsScalar() || f.value.Scalar().empty()) {
    r_.Report(f.mark(), f.path + ": expected a single value, got " + YamlReader::KindOf(f.value),
              "write " + key + ": VALUE on one line (docs/policy.md lists the units)");
    return;
  }
  const std::string& text = f.value.Scalar();
  if (key == "cpu") {
    auto v = units::ParseCpu(text);
    if (!v.ok()) return Bad(f, v.error().message, "write cpu: 0.5 (half a core), cpu: 2 or cpu: \"500m\"");
    if (*v <= 0) return Bad(f, "must be more than 0", "write the number of cores the program may use, e.g. 0.5");
    if (*v < kMinCpu) return Bad(f, "must be at least 0.01 (10m)", "the kernel's and Docker's smallest CPU quota is 0.01 of a core");
    Set(f, p_.cpu, *v);
  } else if (key == "memory" || key == "output" || key == "file_size") {
    auto v = units::ParseBytes(text);
    if (!v.ok()) return Bad(f, v.error().message, "write a size such as 256M (MiB), 1G, 512k or a number of bytes");
    if (*v == 0) return Bad(f, "must be more than 0", "write a size such as " + std::string(key == "memory" ? "256M" : "1M"));
    if (key == "memory" && *v < kMinMemoryBytes)
      return Bad(f, "must be at least " + units::FormatBytes(kMinMemoryBytes),
                 "below it the box itself cannot start (init and the interpreter need memory too)");
    uint64_t& slot = key == "memory" ? p_.memory_bytes : key == "output" ? p_.output_bytes : p_.file_size_bytes;
    Set(f, slot, *v);
  } else if (key == "timeout") {
    auto v = units::ParseDurationMs(text);
    if (!v.ok()) return Bad(f, v.error().message, "write timeout: 30 (seconds), \"30s\", \"500ms\" or \"2m\"");
    if (*v == 0) return Bad(f, "must be more than 0", "write a wall-clock limit such as 30s");
    Set(f, p_.timeout_ms, *v);
  } else if (key == "timeout_grace") {
    auto v = units::ParseDurationMs(text);
    if (!v.ok()) return Bad(f, v.error().message, "write timeout_grace: 2s (SIGTERM, then SIGKILL 2 s later), or 0 for SIGKILL at once");
    if (*v > protocol::kMaxTimeoutGraceMs)
      return Bad(f, "must be at most " + units::FormatDurationMs(protocol::kMaxTimeoutGraceMs),
                 "the grace only lets a program flush its output after SIGTERM; write e.g. 2s");
    Set(f, p_.timeout_grace_ms, *v);
  } else if (key == "pids" || key == "open_files") {
    bool digits = text.find_first_not_of("0123456789") == std::string::npos && text.size() <= 9;
    if (!digits) {
      return Bad(f, "'" + text + "' is not a whole number" + (text[0] == '-' ? " (it is negative)" : ""),
                 "write a plain count such as " + key + ": " + (key == "pids" ? "128" : "256"));
    }
    uint64_t v = std::stoull(text);
    uint64_t minimum = key == "pids" ? 2 : 3;
    if (v < minimum) {
      return Bad(f, "must be at least " + std::to_string(minimum),
                 key == "pids" ? "llm-sandbox-init counts as one process of the box; allow at least 2, e.g. 64"
                               : "stdin, stdout and stderr take 3; allow e.g. 256");
    }
    if (key == "pids") {
      Set(f, p_.pids, static_cast<uint32_t>(v));
    } else {
      Set(f, p_.open_files, v);
    }
  } else {
    Unread(f);
  }
}

}  // namespace lsb::policy_parser
