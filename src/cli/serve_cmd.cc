// llm-sandbox serve: the HTTP daemon (docs/api.md). Thin: options -> DaemonConfig -> RunDaemon.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include "base/unique_fd.h"
#include "cli/commands.h"
#include "monitor/audit_log.h"
#include "policy/units.h"
#include "monitor/webhook.h"
#include "server/body_limits.h"
#include "server/daemon.h"
#include "server/web_guard.h"

namespace lsb::cli {
namespace {

constexpr const char* kServeUsage =
    "usage: llm-sandbox serve [options]\n"
    "\n"
    "  --listen HOST:PORT       address to listen on (default 127.0.0.1:8080)\n"
    "  --policies DIR           policy directory (default: ./policies or /etc/llm-sandbox/policies)\n"
    "  --default-policy NAME    policy of requests that name none (default code-sandbox)\n"
    "  --images FILE            native backend image map (config/images.yaml)\n"
    "  --backend auto|native|docker   auto: docker when an engine answers and can serve every policy\n"
    "                           (default: $LLM_SANDBOX_BACKEND, else auto)\n"
    "  --pool-size N            docker: warm containers kept per policy (default 2; 0 = none)\n"
    "  --native-pool N          native: boxes kept started per policy for one-shot executions (default 2; 0 = none)\n"
    "  --max-concurrency N      executions at once (default: by box cost, the largest policy's memory\n"
    "                           and pids against the host's, from 4 to 64; docs/api.md)\n"
    "  --queue N                requests waiting for a worker before 429 (default 4 x concurrency)\n"
    "  --max-body BYTES         largest request body, e.g. 10M (default: what one --max-file file needs\n"
    "                           as base64 plus 64K, at least 10M: 21.4M with the default; larger: 413)\n"
    "  --max-sessions N         sessions at once (default 64)\n"
    "  --max-file BYTES         largest file uploaded/downloaded (default 16M; with only --max-body,\n"
    "                           the largest file that body carries)\n"
    "  --async-keep N           asynchronous executions kept, pending or finished (default 1000)\n"
    "  --async-keep-bytes BYTES their results' JSON in all; the oldest finished go first (default 64M)\n"
    "  --shutdown-grace SECS    on SIGTERM, how long running executions may finish (default 10)\n"
    "  --token-file FILE        bearer tokens, one per line (or $LLM_SANDBOX_TOKENS, comma-separated);\n"
    "                           required when listening beyond loopback\n"
    "  --generate-token         no token given: make a random one and print it once (the orchestrator image)\n"
    "  --allow-origin ORIGIN    a web origin (scheme://host[:port]) whose pages may call the daemon, with\n"
    "                           CORS (repeatable); other non-loopback Origins get 403 (docs/api.md)\n"
    "\n"
    "slow clients (docs/api.md \"Connection limits\"; durations as 10s, 500ms, or seconds):\n"
    "  --max-connections N      open connections at once (default 512); when full, the most stalled\n"
    "                           idle or half-sent connection is evicted, 503 only if all are busy\n"
    "  --max-connections-per-peer N   connections from one source address (IPv6: one /64) (default 128)\n"
    "  --header-timeout DUR     the whole request line and headers must arrive within this (default 10s)\n"
    "  --body-timeout DUR       the body gets this plus its size / --min-transfer-rate (default 10s)\n"
    "  --write-timeout DUR      each response write gets this plus its size / --min-transfer-rate (default 10s)\n"
    "  --keepalive-timeout DUR  a kept-alive connection with no new request is closed (default 30s)\n"
    "  --min-transfer-rate BYTES  per second, the slowest body upload / response read allowed (default 64K)\n"
    "\n"
    "monitoring (docs/monitoring.md):\n"
    "  --monitoring on|off      metrics, live events, audit log, webhooks, dashboard (default on)\n"
    "  --audit-log FILE|none    the audit log (JSON lines, fdatasync per record; default:\n"
    "                           $LLM_SANDBOX_AUDIT_LOG, $LLM_SANDBOX_STATE_DIR/audit.jsonl,\n"
    "                           /var/lib/llm-sandbox/audit.jsonl for root, else\n"
    "                           ${XDG_STATE_HOME:-~/.local/state}/llm-sandbox/audit.jsonl; none: no log)\n"
    "  --audit-max-size BYTES   rotate the audit log past this size (default 64M)\n"
    "  --audit-keep N           rotated audit files kept (default 5)\n"
    "  --webhook URL            POST alerts to this http:// URL (repeatable)\n"
    "  --webhook-secret-file F  HMAC-SHA256 key for X-LLM-Sandbox-Signature (or $LLM_SANDBOX_WEBHOOK_SECRET)\n"
    "  --webhook-min-severity info|warning|critical   (default warning)\n"
    "  --usage-interval MS      live CPU/RAM sample period of running boxes (default 1000)\n"
    "\n"
    "SIGHUP reloads the policies; SIGTERM stops (running boxes finish or are killed, all removed).\n";

bool ParseCount(const std::string& v, size_t* out) {
  char* end = nullptr;
  unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n == 0) return false;
  *out = static_cast<size_t>(n);
  return true;
}

void AddTokens(const std::string& text, char sep, std::set<std::string>& out) {
  size_t i = 0;
  while (i <= text.size()) {
    size_t j = text.find(sep, i);
    if (j == std::string::npos) j = text.size();
    std::string t = text.substr(i, j - i);
    while (!t.empty() && (t.back() == '\r' || t.back() == ' ' || t.back() == '\t')) t.pop_back();
    size_t k = t.find_first_not_of(" \t");
    t = k == std::string::npos ? "" : t.substr(k);
    if (!t.empty() && t[0] != '#') out.insert(t);
    i = j + 1;
  }
}

// 32 random bytes from the kernel, hex: a bearer token nobody can guess.
Result<std::string> RandomToken() {
  std::ifstream in("/dev/urandom", std::ios::binary);
  unsigned char b[32];
  if (!in.read(reinterpret_cast<char*>(b), sizeof(b))) return Error{"cannot read /dev/urandom"};
  static const char* hex = "0123456789abcdef";
  std::string t;
  for (unsigned char x : b) {
    t += hex[x >> 4];
    t += hex[x & 15];
  }
  return t;
}

// The default audit log (audit_log.h), its directory made; "" with a warning when that fails: a
// daemon nobody asked for a log is not refused for lack of one (--audit-log FILE is).
std::string DefaultAuditLog() {
  std::string path = monitor::DefaultAuditLogPath();
  if (path.empty()) {
    std::fprintf(stderr, "llm-sandbox serve: warning: no audit log (no HOME for its default place); give --audit-log FILE\n");
    return "";
  }
  auto made = monitor::MakeParentDirs(path);
  if (made.ok() && ::access(path.c_str(), F_OK) != 0) {
    UniqueFd probe(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640));
    if (!probe) made = Error::FromErrno("audit log: create " + path);
  } else if (made.ok() && ::access(path.c_str(), W_OK) != 0) {
    made = Error::FromErrno("audit log: write " + path);
  }
  if (!made.ok()) {
    std::fprintf(stderr, "llm-sandbox serve: warning: no audit log at its default place: %s; give --audit-log FILE (or none)\n",
                 made.error().message.c_str());
    return "";
  }
  return path;
}

int Bad(const std::string& msg) {
  std::fprintf(stderr, "llm-sandbox serve: %s\n\n%s", msg.c_str(), kServeUsage);
  return 2;
}

}  // namespace

int ServeCommand(const Args& args) {
  server::DaemonConfig c;
  std::string token_file;
  bool generate_token = false;
  std::string webhook_secret_file;
  std::optional<uint64_t> max_body, max_file;
  std::optional<std::string> audit_log;
  // The environment gives the default backend (tests pin one this way); --backend overrides it.
  if (const char* env = std::getenv("LLM_SANDBOX_BACKEND"); env != nullptr && *env != '\0') c.backend = env;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kServeUsage, stdout);
      return 0;
    }
    std::string v;
    auto value = [&](const char* name) -> bool {
      std::string prefix = std::string(name) + "=";
      if (a.rfind(prefix, 0) == 0) {
        v = a.substr(prefix.size());
        return true;
      }
      if (a == name && i + 1 < args.size()) {
        v = args[++i];
        return true;
      }
      return false;
    };
    if (value("--listen")) {
      size_t colon = v.rfind(':');
      if (colon == std::string::npos) return Bad("--listen wants HOST:PORT, got '" + v + "'");
      c.host = v.substr(0, colon);
      if (c.host.size() > 2 && c.host.front() == '[' && c.host.back() == ']') c.host = c.host.substr(1, c.host.size() - 2);
      char* end = nullptr;
      unsigned long p = std::strtoul(v.c_str() + colon + 1, &end, 10);
      if (*end != '\0' || p > 65535 || colon + 1 == v.size()) return Bad("--listen: bad port in '" + v + "'");
      c.port = static_cast<uint16_t>(p);
    } else if (value("--policies")) {
      c.policies_dir = v;
    } else if (value("--default-policy")) {
      c.limits.default_policy = v;
    } else if (value("--images")) {
      c.images_file = v;
    } else if (value("--backend")) {
      c.backend = v;
    } else if (value("--init")) {
      c.init_path = v;
    } else if (value("--pool-size")) {
      if (v != "0" && !ParseCount(v, &c.pool_size)) return Bad("--pool-size wants a count");
      if (v == "0") c.pool_size = 0;
    } else if (value("--native-pool")) {
      c.native_pool = 0;
      if (v != "0" && !ParseCount(v, &c.native_pool)) return Bad("--native-pool wants a count");
    } else if (value("--max-concurrency")) {
      if (!ParseCount(v, &c.max_concurrency)) return Bad("--max-concurrency wants a positive integer");
    } else if (value("--queue")) {
      if (v == "0") {
        return Bad("--queue wants a positive integer");
      }
      if (!ParseCount(v, &c.queue)) return Bad("--queue wants a positive integer");
    } else if (value("--max-sessions")) {
      if (!ParseCount(v, &c.max_sessions)) return Bad("--max-sessions wants a positive integer");
    } else if (value("--max-body") || value("--max-file") || value("--async-keep-bytes")) {
      auto n = units::ParseBytes(v);
      if (!n.ok() || *n == 0) return Bad(a + ": " + (n.ok() ? "must be positive" : n.error().message));
      if (a.rfind("--max-body", 0) == 0) max_body = *n;
      else if (a.rfind("--max-file", 0) == 0) max_file = *n;
      else c.async_results.max_bytes = *n;
    } else if (value("--async-keep")) {
      if (!ParseCount(v, &c.async_results.max_entries)) return Bad("--async-keep wants a positive integer");
    } else if (value("--shutdown-grace")) {
      size_t s = 0;
      if (v != "0" && !ParseCount(v, &s)) return Bad("--shutdown-grace wants seconds");
      c.shutdown_grace_ms = static_cast<int>(s * 1000);
    } else if (value("--allow-origin")) {
      auto o = server::NormalizeOrigin(v);
      if (!o.ok()) return Bad("--allow-origin: " + o.error().message);
      c.allowed_origins.insert(*o);
    } else if (value("--max-connections")) {
      if (!ParseCount(v, &c.connections.max_total)) return Bad("--max-connections wants a positive integer");
    } else if (value("--max-connections-per-peer")) {
      if (!ParseCount(v, &c.connections.max_per_peer)) return Bad("--max-connections-per-peer wants a positive integer");
    } else if (value("--header-timeout") || value("--body-timeout") || value("--write-timeout") ||
               value("--keepalive-timeout")) {
      auto ms = units::ParseDurationMs(v);
      if (!ms.ok() || *ms == 0 || *ms > 3600000)
        return Bad(a + ": wants a duration from 1ms to 1h such as 10s or 500ms" + (ms.ok() ? "" : ": " + ms.error().message));
      int n = static_cast<int>(*ms);
      if (a.rfind("--header-timeout", 0) == 0) c.header_timeout_ms = n;
      else if (a.rfind("--body-timeout", 0) == 0) c.body_timeout_ms = n;
      else if (a.rfind("--write-timeout", 0) == 0) c.write_timeout_ms = n;
      else c.keepalive_timeout_ms = n;
    } else if (value("--min-transfer-rate")) {
      auto n = units::ParseBytes(v);
      if (!n.ok() || *n == 0) return Bad("--min-transfer-rate wants bytes per second such as 64K");
      c.min_transfer_rate = *n;
    } else if (a == "--generate-token") {
      generate_token = true;
    } else if (value("--token-file")) {
      token_file = v;
    } else if (value("--monitoring")) {
      if (v != "on" && v != "off") return Bad("--monitoring wants on or off");
      c.monitoring = v == "on";
    } else if (value("--audit-log")) {
      if (v.empty()) return Bad("--audit-log wants a file, or none");
      audit_log = v;
    } else if (value("--audit-max-size")) {
      auto n = units::ParseBytes(v);
      if (!n.ok() || *n == 0) return Bad("--audit-max-size wants a size such as 64M");
      c.monitor.audit_max_bytes = *n;
    } else if (value("--audit-keep")) {
      size_t k = 0;
      if (v != "0" && !ParseCount(v, &k)) return Bad("--audit-keep wants a count");
      c.monitor.audit_keep = static_cast<int>(k);
    } else if (value("--webhook")) {
      auto u = monitor::ParseWebhookUrl(v);
      if (!u.ok()) return Bad(u.error().message);
      c.monitor.webhooks.urls.push_back(*u);
    } else if (value("--webhook-secret-file")) {
      webhook_secret_file = v;
    } else if (value("--webhook-min-severity")) {
      auto severity = protocol::ParseSeverity(v);
      if (!severity) return Bad("--webhook-min-severity wants info, warning or critical");
      c.monitor.webhooks.min_severity = *severity;
    } else if (value("--usage-interval")) {
      size_t ms = 0;
      if (!ParseCount(v, &ms) || ms < 50) return Bad("--usage-interval wants milliseconds, at least 50");
      c.monitor.usage_interval_ms = ms;
    } else {
      return Bad("unknown option '" + a + "'");
    }
  }
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    if (!in) return Bad("--token-file " + token_file + ": cannot read it");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    AddTokens(text, '\n', c.tokens);
    if (c.tokens.empty()) return Bad("--token-file " + token_file + " has no token");
  }
  if (const char* env = std::getenv("LLM_SANDBOX_TOKENS")) AddTokens(env, ',', c.tokens);
  if (generate_token && c.tokens.empty()) {
    auto tok = RandomToken();
    if (!tok.ok()) return Bad("--generate-token: " + tok.error().message);
    c.tokens.insert(*tok);
    std::fprintf(stderr,
                 "llm-sandbox serve: no token was given, so one was generated; every request needs\n"
                 "  Authorization: Bearer %s\n"
                 "(set LLM_SANDBOX_TOKENS or --token-file to choose your own)\n",
                 tok->c_str());
  }
  if (!webhook_secret_file.empty()) {
    std::ifstream in(webhook_secret_file);
    if (!in) return Bad("--webhook-secret-file " + webhook_secret_file + ": cannot read it");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (text.empty()) return Bad("--webhook-secret-file " + webhook_secret_file + " is empty");
    c.monitor.webhooks.secret = text;
  } else if (const char* env = std::getenv("LLM_SANDBOX_WEBHOOK_SECRET")) {
    c.monitor.webhooks.secret = env;
  }
  if (!c.monitor.webhooks.urls.empty() && c.monitor.webhooks.secret.empty())
    std::fprintf(stderr, "llm-sandbox serve: warning: webhooks are not signed (no --webhook-secret-file)\n");
  auto sizes = server::ReconcileBodyLimits(max_body, max_file, c.limits.max_file_bytes);
  if (!sizes.ok()) return Bad(sizes.error().message);
  c.max_body = sizes->max_body;
  c.limits.max_file_bytes = sizes->max_file;
  if (!sizes->note.empty()) std::fprintf(stderr, "llm-sandbox serve: %s\n", sizes->note.c_str());
  if (c.monitoring) {
    if (audit_log && monitor::IsAuditLogOff(*audit_log)) {
      c.monitor.audit_path.clear();
    } else if (audit_log) {
      c.monitor.audit_path = *audit_log;
    } else {
      c.monitor.audit_path = DefaultAuditLog();
    }
  }
  return server::RunDaemon(std::move(c));
}

}  // namespace lsb::cli
