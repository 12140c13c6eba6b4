// llm-sandbox logs: reads, filters and follows the daemon's audit log (docs/monitoring.md).
// Rotated files (FILE.N ... FILE.1) are read oldest first, then FILE. Only complete lines are
// taken: a line cut by a crash (no final '\n') is never shown as a record.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/bounded_json.h"
#include "base/unique_fd.h"
#include "cli/commands.h"
#include "cli/option_cursor.h"
#include "monitor/audit_log.h"
#include "monitor/audit_log_place.h"
#include "base/state_dir.h"
#include "monitor/monitor.h"
#include "policy/alert_rules.h"
#include "runtime/exec_result.h"

namespace lsb::cli {
namespace {

using nlohmann::json;

// Longer lines are not records this daemon writes (an execution record is a few KiB).
constexpr size_t kMaxRecordBytes = 16u << 20;

constexpr const char* kLogsUsage =
    "usage: llm-sandbox logs [--file FILE] [filters] [-f] [--json]\n"
    "\n"
    "  --file FILE        the audit log to read (FILE.N ... FILE.1 first)\n"
    "  --daemon HOST:PORT the log of the daemon started with --listen HOST:PORT (PORT: 127.0.0.1)\n"
    "                     default: $LLM_SANDBOX_AUDIT_LOG, else the daemons' own logs in the state dir\n"
    "                     (<state dir>/daemons/HOST_PORT/audit.jsonl): the only one, or the one written\n"
    "                     last (named on stderr); else <state dir>/audit.jsonl of older daemons\n"
    "  --policy NAME      records of this policy\n"
    "  --status STATUS    executions that ended so (ok, error, timeout, oom, killed, denied,\n"
    "                     output_limit, reset, sandbox_error)\n"
    "  --rule RULE        alerts of this rule, and executions that raised one (network_attempt,\n"
    "                     denied_exec, escape_syscall, oom_kill, pids_limit, timeout, output_flood, ...)\n"
    "  --type execution|alert\n"
    "  --since WHEN       records from then on: RFC 3339 (2024-05-01T10:00:00Z) or an age (90s, 10m, 2h, 1d)\n"
    "  --execution ID     the records of one execution\n"
    "  -f, --follow       keep reading as records are appended (across rotations)\n"
    "  --json             print the records as they are (JSON lines)\n"
    "\n"
    "an unknown --status, --rule or --type is an error (exit 2) that lists the valid values\n";

struct Filter {
  std::string policy, status, rule, type, since, execution;
  bool Match(const json& r) const {
    std::string t = r.value("type", "");
    if (!type.empty() && t != type) return false;
    if (!policy.empty() && r.value("policy", "") != policy) return false;
    if (!execution.empty() && r.value("execution_id", "") != execution) return false;
    if (!since.empty() && r.value("time", "") < since) return false;
    if (!status.empty() && (t != "execution" || r.value("status", "") != status)) return false;
    if (!rule.empty()) {
      if (t == "alert") return r.value("rule", "") == rule;
      bool any = false;
      if (r.contains("alerts") && r["alerts"].is_array())
        for (const auto& a : r["alerts"]) any |= a.value("rule", "") == rule;
      return any;
    }
    return true;
  }
};

// "10m" -> the RFC 3339 time 10 minutes ago; an RFC 3339 text is taken as it is.
std::optional<std::string> ParseSince(const std::string& v) {
  if (v.size() >= 10 && v[4] == '-' && v[7] == '-') return v;
  char* end = nullptr;
  double n = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || n < 0) return std::nullopt;
  std::string unit = end;
  double secs = unit == "s" || unit.empty() ? n : unit == "m" ? n * 60 : unit == "h" ? n * 3600 : unit == "d" ? n * 86400 : -1;
  if (secs < 0) return std::nullopt;
  auto t = std::chrono::system_clock::now() - std::chrono::milliseconds(static_cast<int64_t>(secs * 1000));
  return Rfc3339(std::chrono::time_point_cast<std::chrono::system_clock::duration>(t));
}

void Print(const json& r, bool raw, const std::string& line) {
  if (raw) {
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fputc('\n', stdout);
    return;
  }
  std::string t = r.value("type", "");
  std::string time = r.value("time", "");
  if (t == "execution") {
    std::string rules;
    if (r.contains("alerts"))
      for (const auto& a : r["alerts"]) rules += (rules.empty() ? "" : ",") + a.value("rule", "");
    const json u = r.value("usage", json::object());
    std::printf("%s exec  %s %-14s %-12s exit=%s wall=%sms cpu=%sms mem=%s code=%sB sha256=%.12s%s%s\n", time.c_str(),
                r.value("execution_id", "").c_str(), r.value("policy", "").c_str(), r.value("status", "").c_str(),
                r.contains("exit_code") ? r["exit_code"].dump().c_str() : "-",
                u.contains("duration_ms") ? u["duration_ms"].dump().c_str() : "-",
                u.contains("cpu_ms") ? u["cpu_ms"].dump().c_str() : "-",
                u.contains("memory_peak_bytes") ? u["memory_peak_bytes"].dump().c_str() : "-",
                r.contains("code_bytes") ? r["code_bytes"].dump().c_str() : "-", r.value("code_sha256", "").c_str(),
                rules.empty() ? "" : " alerts=", rules.c_str());
  } else if (t == "alert") {
    std::printf("%s alert %s %-14s %-8s %s: %s\n", time.c_str(), r.value("execution_id", "").c_str(),
                r.value("policy", "").c_str(), r.value("severity", "").c_str(), r.value("rule", "").c_str(),
                r.value("message", "").c_str());
  } else {
    std::printf("%s\n", line.c_str());
  }
}

// Takes the complete lines of `buf` (leaving a partial last one in it).
void Consume(std::string& buf, const Filter& f, bool raw) {
  size_t start = 0;
  for (;;) {
    size_t nl = buf.find('\n', start);
    if (nl == std::string::npos) break;
    std::string line = buf.substr(start, nl - start);
    start = nl + 1;
    if (line.empty()) continue;
    // The file is the daemon's, but anyone who can write it can shape it: bounded like any
    // outside JSON, and a record with a field of the wrong type is skipped, not fatal.
    ParsedJson r = ParseBoundedJson(line, {kMaxRecordBytes, kJsonMaxDepth, kJsonMaxElements});
    if (!r.ok() || !r->is_object()) continue;  // not a record (never written whole)
    try {
      if (f.Match(*r)) Print(*r, raw, line);
    } catch (const json::exception&) {
    }
  }
  buf.erase(0, start);
  std::fflush(stdout);
}

bool ReadAll(int fd, std::string& buf) {
  char chunk[65536];
  bool any = false;
  for (;;) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return any;
    buf.append(chunk, static_cast<size_t>(n));
    any = true;
  }
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
  return out;
}

// A filter value no record can have is a typo, not an empty answer: named, with the valid values.
std::optional<std::string> CheckFilterValues(const Filter& f) {
  if (!f.type.empty() && f.type != "execution" && f.type != "alert")
    return "--type '" + f.type + "' is not a record type; valid: execution, alert";
  if (!f.status.empty()) {
    std::vector<std::string> statuses;
    for (ExecStatus s : protocol::AllExecStatuses()) statuses.push_back(ExecStatusName(s));
    statuses.push_back("sandbox_error");  // the daemon's own failure (monitor.cc)
    if (std::find(statuses.begin(), statuses.end(), f.status) == statuses.end())
      return "--status '" + f.status + "' is not an execution status; valid: " + Join(statuses);
  }
  if (!f.rule.empty()) {
    std::vector<std::string> rules;
    for (const auto& r : protocol::AlertRules()) rules.push_back(r.name);
    if (std::find(rules.begin(), rules.end(), f.rule) == rules.end())
      return "--rule '" + f.rule + "' is not an alert rule; valid: " + Join(rules);
  }
  return std::nullopt;
}

int Bad(const std::string& msg) {
  std::fprintf(stderr, "llm-sandbox logs: %s\n\n%s", msg.c_str(), kLogsUsage);
  return 2;
}

// The audit log read without --file: the daemon --daemon names; $LLM_SANDBOX_AUDIT_LOG; the only
// daemon's of the state dir, or the one written last (said on stderr, with how to choose); else the
// state dir's audit.jsonl, which daemons wrote before each had its own.
Result<std::string> DefaultLogFile(const std::string& daemon) {
  if (!daemon.empty()) {
    std::string key = monitor::KeyOfListenAddress(daemon);
    if (key.empty())
      return Error{"--daemon wants the daemon's --listen HOST:PORT (or a PORT of 127.0.0.1), got '" + daemon + "'"};
    std::string state = DefaultStateDir();
    if (state.empty()) return Error{"no state dir (no HOME): give --file FILE or set LLM_SANDBOX_STATE_DIR"};
    return state + "/daemons/" + key + "/audit.jsonl";
  }
  if (const char* env = std::getenv("LLM_SANDBOX_AUDIT_LOG"); env && *env) return std::string(env);
  std::vector<monitor::FoundAuditLog> found = monitor::FindDaemonAuditLogs();
  if (found.size() > 1) {
    std::string others;
    for (size_t i = 1; i < found.size(); ++i) others += (others.empty() ? "" : ", ") + found[i].key;
    std::fprintf(stderr, "llm-sandbox logs: reading the log of daemon %s (written last); others here: %s; "
                 "choose one with --daemon HOST:PORT\n", found[0].key.c_str(), others.c_str());
  }
  if (!found.empty()) return found[0].path;
  return monitor::DefaultAuditLogPath();
}

}  // namespace

int LogsCommand(const Args& args) {
  Filter f;
  std::string file, daemon;
  bool follow = false, raw = false;
  OptionCursor o(args);
  while (o.Next()) {
    const std::string a = o.arg();
    auto value = [&o](const char* name, std::string& out) { return o.Into(name, out); };
    std::string since;
    if (a == "--help" || a == "-h") {
      std::fputs(kLogsUsage, stdout);
      return 0;
    } else if (a == "-f" || a == "--follow") {
      follow = true;
    } else if (a == "--json") {
      raw = true;
    } else if (value("--file", file) || value("--daemon", daemon) || value("--policy", f.policy) ||
               value("--status", f.status) ||
               value("--rule", f.rule) || value("--execution", f.execution) || value("--type", f.type)) {
    } else if (value("--since", since)) {
      auto s = ParseSince(since);
      if (!s) return Bad("--since wants an RFC 3339 time or an age such as 10m, got '" + since + "'");
      f.since = *s;
    } else {
      return Bad("unknown option '" + a + "'");
    }
  }
  const bool default_file = file.empty();
  if (default_file) {
    auto chosen = DefaultLogFile(daemon);
    if (!chosen.ok()) return Bad(chosen.error().message);
    file = *chosen;
  }
  if (file.empty()) return Bad("no audit log: give --file FILE (the daemon's --audit-log) or set LLM_SANDBOX_AUDIT_LOG");
  if (auto bad = CheckFilterValues(f)) return Bad(*bad);

  // Rotated files first, oldest (highest number) first.
  int highest = 0;
  while (::access((file + "." + std::to_string(highest + 1)).c_str(), F_OK) == 0) ++highest;
  for (int i = highest; i >= 1; --i) {
    UniqueFd fd(::open((file + "." + std::to_string(i)).c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) continue;
    std::string buf;
    ReadAll(fd.get(), buf);
    Consume(buf, f, raw);
  }
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd && !follow) {
    std::fprintf(stderr, "llm-sandbox logs: cannot open %s: %s%s\n", file.c_str(), std::strerror(errno),
                 default_file ? " (the default place of the daemon's audit log for this user: a daemon run as "
                                "another user, or with --audit-log FILE, writes elsewhere; give --file FILE)"
                              : "");
    return 1;
  }
  std::string buf;
  if (fd) ReadAll(fd.get(), buf);
  Consume(buf, f, raw);
  if (!follow) return 0;
  std::signal(SIGPIPE, SIG_DFL);
  struct stat cur {};
  if (fd) ::fstat(fd.get(), &cur);
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (fd && ReadAll(fd.get(), buf)) Consume(buf, f, raw);
    // Rotated (or created): finish the old file, then continue with the new one from its start.
    struct stat now {};
    if (::stat(file.c_str(), &now) == 0 && (!fd || now.st_ino != cur.st_ino || now.st_dev != cur.st_dev)) {
      if (fd && ReadAll(fd.get(), buf)) Consume(buf, f, raw);
      buf.clear();
      fd.reset(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
      if (fd) ::fstat(fd.get(), &cur);
    }
  }
}

}  // namespace lsb::cli
