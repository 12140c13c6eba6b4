// llm-sandbox serve: the HTTP daemon (docs/api.md). Thin: options -> DaemonConfig -> RunDaemon.
#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include "base/unique_fd.h"
#include "cli/commands.h"
#include "cli/option_cursor.h"
#include "cli/registry_flags.h"
#include "monitor/audit_log.h"
#include "monitor/audit_log_place.h"
#include "policy/units.h"
#include "monitor/webhook.h"
#include "protocol/wire_values.h"
#include "scheduler/session/session_manager.h"
#include "scheduler/session/session_pool.h"
#include "egress/egress_options.h"
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
    "  --mount-root DIR         a host directory policies' container.mounts may bind from (repeatable;\n"
    "                           none given: every container.mounts is refused)\n"
    "  --node-name NAME         this daemon's node, named in /readyz, /metrics, results and session ids\n"
    "                           (letters, digits, - and _; default $LLM_SANDBOX_NODE, else the short hostname)\n"
    "  --backend auto|native|docker   auto: docker when an engine answers and can serve every policy\n"
    "                           (default: $LLM_SANDBOX_BACKEND, else auto)\n"
    "  --pool-size N            warm boxes kept started per policy, whatever the backend (default 2; 0 = none)\n"
    "  --prebuild               build every policy's container.build before listening (native store or\n"
    "                           Docker engine;\n"
    "                           without it, the first box of a policy builds it)\n"
    "  --native-pool N          the same as --pool-size (its older name; the last one given wins)\n"
    "  --fork-server            native: a python run's or session's box comes from a fork of the policy's\n"
    "                           interpreter, started once per token, instead of a new python (the default;\n"
    "                           asked for: an error where it cannot be had; docs/architecture.md \"Fork server\")\n"
    "  --no-fork-server         every box starts its own python (default: $LLM_SANDBOX_FORK_SERVER=off)\n"
    "  --session-pool N         warm python session boxes kept at most per (policy, setup, token) key, setup\n"
    "                           already run, for creates, forks and resets; a key keeps one more than it\n"
    "                           served in the last 60 s (default: one per 2 GiB of available memory, 2 to 16;\n"
    "                           0 = none; 8 keys; docs/api.md \"Warm session pool\")\n"
    "  --max-concurrency N      executions at once (default: by box cost, the largest policy's memory\n"
    "                           and pids against the host's, from 4 to 64; docs/api.md)\n"
    "  --queue N                requests waiting for a worker before 429 (default 4 x concurrency)\n"
    "  --max-body BYTES         largest request body, e.g. 10M (default: what one --max-file file needs\n"
    "                           as base64 plus 64K, at least 10M: 21.4M with the default; larger: 413)\n"
    "  --max-sessions N         sessions at once (default: the host's memory / 32 MiB, from 16 to 4096)\n"
    "  --session-queue N        creates waiting for a session slot at the cap, first come first served\n"
    "                           (default 256; 0: no queue, 429 at once)\n"
    "  --session-queue-wait MS  how long a create waits in that queue before 429 (default 30000; 0: none)\n"
    "  --max-file BYTES         largest file uploaded/downloaded (default 16M; with only --max-body,\n"
    "                           the largest file that body carries)\n"
    "  --async-keep N           asynchronous executions kept, pending or finished (default 1000)\n"
    "  --async-keep-bytes BYTES their results' JSON in all; the oldest finished go first (default 64M)\n"
    "  --async-keep-for SECONDS a finished asynchronous result is kept this long (default 3600)\n"
    "  --paused-dir DIR|none    where paused sessions are kept (default: <state dir>/paused-sessions;\n"
    "                           none: pause and resume answer 501)\n"
    "  --max-paused N           paused sessions kept at most (default 64)\n"
    "  --max-paused-per-owner N one token's share of them (default: a quarter of --max-paused, >= 1)\n"
    "  --paused-ttl SECS        a paused session is removed this long after its pause, records found\n"
    "                           at start included (default 86400)\n"
    "  --max-paused-bytes BYTES one paused session's files and state on disk (default 128M; 413)\n"
    "  --max-paused-total-bytes BYTES  all paused sessions' (default 2G; 429)\n"
    "  --fanout-budget BYTES    daemon-wide memory for fork, batch, pause and resume: each reserves its\n"
    "                           worst case before it starts, back when its answer is sent (default\n"
    "                           256M; 0: none). Spent: a request waits up to --fanout-wait, then 429\n"
    "  --fanout-wait SECS       how long a request waits for the fan-out budget (default 30)\n"
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
    "egress proxy of boxes with network.enabled (docs/network.md):\n"
    "  --egress-resolve NAME:ADDR   NAME resolves to ADDR, not through DNS (repeatable; for tests and\n"
    "                           air-gapped operators; the address is still checked like any other)\n"
    "  --egress-max-connections N   open proxied connections per box (default 32)\n"
    "  --egress-max-connections-total N  open proxied connections across every box of this daemon\n"
    "                           (default 512; more are refused with 503 and a network_denied alert)\n"
    "  --egress-max-bytes BYTES     proxied bytes per execution, both ways (default 1G)\n"
    "  --egress-max-bandwidth BYTES proxied bytes per second per box, both ways (default 1G; 0: no cap)\n"
    "  --egress-idle-timeout SECS   a proxied connection idle this long is closed (default 60)\n"
    "  --secrets-file FILE          NAME=value lines (mode 600) for network.secrets' ${NAME}, read at\n"
    "                           every box start; the daemon's environment is the fallback\n"
    "  --egress-upstream-ca FILE    trust only these CA certificates (PEM) when the proxy speaks TLS to a\n"
    "                           secret's host (default: the host's trust store)\n"
    "\n"
    "monitoring (docs/monitoring.md):\n"
    "  --monitoring on|off      metrics, live events, audit log, webhooks, dashboard (default on)\n"
    "  --audit-log FILE|none    the audit log (JSON lines, fdatasync per record; default:\n"
    "                           $LLM_SANDBOX_AUDIT_LOG, else this daemon's own file in the state dir:\n"
    "                           <state dir>/daemons/HOST_PORT/audit.jsonl (HOST:PORT of --listen; the\n"
    "                           state dir is $LLM_SANDBOX_STATE_DIR, /var/lib/llm-sandbox for root, else\n"
    "                           ${XDG_STATE_HOME:-~/.local/state}/llm-sandbox); none: no log)\n"
    "  --audit-max-size BYTES   rotate the audit log past this size (default 64M)\n"
    "  --audit-keep N           rotated audit files kept (default 5)\n"
    "  --webhook URL            POST alerts to this http:// URL (repeatable)\n"
    "  --webhook-secret-file F  HMAC-SHA256 key for X-LLM-Sandbox-Signature (or $LLM_SANDBOX_WEBHOOK_SECRET)\n"
    "  --webhook-min-severity info|warning|critical   (default warning)\n"
    "  --usage-interval MS      live CPU/RAM sample period of running boxes (default 1000)\n"
    "\n"
    "images (docs/images.md): an image the image map does not give comes from the image store,\n"
    "pulled on first use when the policy's container.pull says so (default missing):\n";
constexpr const char* kServeUsageTail =
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
std::string DefaultAuditLog(const std::string& host, uint16_t port) {
  std::string path = monitor::DaemonAuditLogPath(host, port);
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
  std::fprintf(stderr, "llm-sandbox serve: %s\n\n%s%s%s", msg.c_str(), kServeUsage, kRegistryFlagsUsage, kServeUsageTail);
  return 2;
}

// A count that may be 0 ("none").
bool ParseCountOrZero(const std::string& v, size_t* out) {
  if (v == "0") {
    *out = 0;
    return true;
  }
  return ParseCount(v, out);
}

// What the command line gives beyond the DaemonConfig, settled after every option is read.
struct ServeInputs {
  server::DaemonConfig c;
  std::string token_file;
  bool generate_token = false;
  std::string webhook_secret_file;
  std::optional<uint64_t> max_body, max_file;
  std::optional<std::string> audit_log;
};

// Each group of options: true when the option was one of its own, an error naming a bad value.
using Took = Result<bool>;

Took ListenOption(const std::string& v, server::DaemonConfig& c) {
  size_t colon = v.rfind(':');
  if (colon == std::string::npos) return Error{"--listen wants HOST:PORT, got '" + v + "'"};
  std::string& host = c.http.host;
  host = v.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  char* end = nullptr;
  unsigned long p = std::strtoul(v.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || p > 65535 || colon + 1 == v.size()) return Error{"--listen: bad port in '" + v + "'"};
  c.http.port = static_cast<uint16_t>(p);
  return true;
}

// Where it listens, what it serves, and on how many workers.
Took ServingOption(OptionCursor& o, ServeInputs& in) {
  server::DaemonConfig& c = in.c;
  const std::string name = o.arg().substr(0, o.arg().find('='));  // before Is() moves to a value
  const std::string& v = o.value();
  if (o.arg() == "--prebuild") return c.prebuild = true, true;
  if (o.arg() == "--fork-server") return c.fork_server = true, true;
  if (o.arg() == "--no-fork-server") return c.fork_server = false, true;
  if (o.Is("--listen")) return ListenOption(v, c);
  if (o.Is("--policies")) return c.policies_dir = v, true;
  if (o.Is("--default-policy")) return c.limits.default_policy = v, true;
  if (o.Is("--images")) return c.images_file = v, true;
  if (o.Is("--mount-root")) return c.mount_roots.push_back(v), true;
  if (o.Is("--backend")) return c.backend = v, true;
  if (o.Is("--node-name")) return c.node_name = v, true;
  if (o.Is("--init")) return c.init_path = v, true;
  if (o.Is("--store")) return c.image_store = v, true;
  for (const auto& flag : RegistryFlagNames())
    if (o.Is(flag.c_str())) return ApplyRegistryFlag(flag, v, c.pull), true;
  // One knob for every backend's pool; --native-pool is its older name, kept for scripts.
  if (o.Is("--pool-size") || o.Is("--native-pool")) {
    if (!ParseCountOrZero(v, &c.pool_size)) return Error{name + " wants a count"};
    return true;
  }
  if (o.Is("--session-pool")) {
    size_t depth = 0;
    if (!ParseCountOrZero(v, &depth) || depth > sched::kMaxSessionPoolPerKey)
      return Error{"--session-pool wants a count from 0 to " + std::to_string(sched::kMaxSessionPoolPerKey)};
    c.session_pool = depth;
    return true;
  }
  if (o.Is("--max-concurrency")) {
    if (!ParseCount(v, &c.max_concurrency)) return Error{"--max-concurrency wants a positive integer"};
    return true;
  }
  if (o.Is("--queue")) {
    if (!ParseCount(v, &c.queue)) return Error{"--queue wants a positive integer"};
    return true;
  }
  if (o.Is("--max-sessions")) {
    if (!ParseCount(v, &c.max_sessions)) return Error{"--max-sessions wants a positive integer"};
    return true;
  }
  if (o.Is("--async-keep")) {
    if (!ParseCount(v, &c.async_results.max_entries)) return Error{"--async-keep wants a positive integer"};
    return true;
  }
  if (o.Is("--max-paused")) {
    if (!ParseCount(v, &c.max_paused)) return Error{"--max-paused wants a positive integer"};
    return true;
  }
  if (o.Is("--paused-dir")) {
    if (v.empty() || (v != "none" && v[0] != '/')) return Error{"--paused-dir wants an absolute directory or none"};
    c.paused_dir = v;
    return true;
  }
  if (o.Is("--async-keep-for")) {
    size_t secs = 0;
    if (!ParseCount(v, &secs)) return Error{"--async-keep-for wants a positive number of seconds"};
    c.async_results.keep_for = std::chrono::seconds(secs);
    return true;
  }
  if (o.Is("--shutdown-grace")) {
    size_t secs = 0;
    if (!ParseCountOrZero(v, &secs)) return Error{"--shutdown-grace wants seconds"};
    c.shutdown_grace_ms = static_cast<int>(secs * 1000);
    return true;
  }
  return false;
}

// The session create queue (docs/api.md "Session queue"): how many creates wait for a slot, how long.
Took SessionQueueOption(OptionCursor& o, ServeInputs& in) {
  if (o.Is("--session-queue")) {
    if (!ParseCountOrZero(o.value(), &in.c.session_queue)) return Error{"--session-queue wants a count (0: no queue)"};
    return true;
  }
  if (!o.Is("--session-queue-wait")) return false;
  size_t ms = 0;
  if (!ParseCountOrZero(o.value(), &ms)) return Error{"--session-queue-wait wants milliseconds (0: refuse at once)"};
  in.c.session_queue_wait_ms = ms;
  return true;
}

// Paused sessions' bounds and the fan-out budget (docs/api.md "Pause and resume", "Memory budget").
Took PausedOption(OptionCursor& o, ServeInputs& in) {
  server::DaemonConfig& c = in.c;
  const std::string a = o.arg();
  if (o.Is("--max-paused-per-owner")) {
    if (!ParseCount(o.value(), &c.max_paused_per_owner)) return Error{"--max-paused-per-owner wants a positive integer"};
    return true;
  }
  if (o.Is("--paused-ttl") || o.Is("--fanout-wait")) {
    size_t secs = 0;
    if (!ParseCount(o.value(), &secs)) return Error{a + " wants a positive number of seconds"};
    if (a.rfind("--paused-ttl", 0) == 0) c.paused_ttl_s = secs;
    else c.fanout_wait_ms = secs * 1000;
    return true;
  }
  if (!(o.Is("--max-paused-bytes") || o.Is("--max-paused-total-bytes") || o.Is("--fanout-budget"))) return false;
  auto n = units::ParseBytes(o.value());
  const bool budget = a.rfind("--fanout-budget", 0) == 0;
  if (!n.ok() || (*n == 0 && !budget)) return Error{a + ": " + (n.ok() ? "must be positive" : n.error().message)};
  if (budget) c.fanout_budget = *n;
  else if (a.rfind("--max-paused-total-bytes", 0) == 0) c.max_paused_total_bytes = *n;
  else c.max_paused_bytes = *n;
  return true;
}

// Sizes in bytes (10M, 64K...).
Took SizeOption(OptionCursor& o, ServeInputs& in) {
  const std::string a = o.arg();
  if (!(o.Is("--max-body") || o.Is("--max-file") || o.Is("--async-keep-bytes"))) return false;
  auto n = units::ParseBytes(o.value());
  if (!n.ok() || *n == 0) return Error{a + ": " + (n.ok() ? "must be positive" : n.error().message)};
  if (a.rfind("--max-body", 0) == 0) in.max_body = *n;
  else if (a.rfind("--max-file", 0) == 0) in.max_file = *n;
  else in.c.async_results.max_bytes = *n;
  return true;
}

// Who may call it: tokens and web origins.
Took AccessOption(OptionCursor& o, ServeInputs& in) {
  if (o.arg() == "--generate-token") return in.generate_token = true;
  if (o.Is("--token-file")) return in.token_file = o.value(), true;
  if (o.Is("--allow-origin")) {
    auto origin = server::NormalizeOrigin(o.value());
    if (!origin.ok()) return Error{"--allow-origin: " + origin.error().message};
    in.c.allowed_origins.insert(*origin);
    return true;
  }
  return false;
}

// Slow clients (docs/api.md "Connection limits").
Took ConnectionOption(OptionCursor& o, ServeInputs& in) {
  server::HttpServerOptions& c = in.c.http;
  const std::string a = o.arg();
  if (o.Is("--max-connections")) {
    if (!ParseCount(o.value(), &c.connections.max_total)) return Error{"--max-connections wants a positive integer"};
    return true;
  }
  if (o.Is("--max-connections-per-peer")) {
    if (!ParseCount(o.value(), &c.connections.max_per_peer))
      return Error{"--max-connections-per-peer wants a positive integer"};
    return true;
  }
  if (o.Is("--header-timeout") || o.Is("--body-timeout") || o.Is("--write-timeout") || o.Is("--keepalive-timeout")) {
    auto ms = units::ParseDurationMs(o.value());
    if (!ms.ok() || *ms == 0 || *ms > 3600000)
      return Error{a + ": wants a duration from 1ms to 1h such as 10s or 500ms" + (ms.ok() ? "" : ": " + ms.error().message)};
    int n = static_cast<int>(*ms);
    if (a.rfind("--header-timeout", 0) == 0) c.header_timeout_ms = n;
    else if (a.rfind("--body-timeout", 0) == 0) c.body_timeout_ms = n;
    else if (a.rfind("--write-timeout", 0) == 0) c.write_timeout_ms = n;
    else c.keepalive_timeout_ms = n;
    return true;
  }
  if (o.Is("--min-transfer-rate")) {
    auto n = units::ParseBytes(o.value());
    if (!n.ok() || *n == 0) return Error{"--min-transfer-rate wants bytes per second such as 64K"};
    c.min_transfer_rate = *n;
    return true;
  }
  return false;
}

// Metrics, the audit log, webhooks (docs/monitoring.md).
Took MonitoringOption(OptionCursor& o, ServeInputs& in) {
  server::DaemonConfig& c = in.c;
  const std::string& v = o.value();
  if (o.Is("--monitoring")) {
    if (v != "on" && v != "off") return Error{"--monitoring wants on or off"};
    return c.monitoring = v == "on", true;
  }
  if (o.Is("--audit-log")) {
    if (v.empty()) return Error{"--audit-log wants a file, or none"};
    return in.audit_log = v, true;
  }
  if (o.Is("--audit-max-size")) {
    auto n = units::ParseBytes(v);
    if (!n.ok() || *n == 0) return Error{"--audit-max-size wants a size such as 64M"};
    return c.monitor.audit_max_bytes = *n, true;
  }
  if (o.Is("--audit-keep")) {
    size_t k = 0;
    if (!ParseCountOrZero(v, &k)) return Error{"--audit-keep wants a count"};
    return c.monitor.audit_keep = static_cast<int>(k), true;
  }
  if (o.Is("--webhook")) {
    auto u = monitor::ParseWebhookUrl(v);
    if (!u.ok()) return u.error();
    c.monitor.webhooks.urls.push_back(*u);
    return true;
  }
  if (o.Is("--webhook-secret-file")) return in.webhook_secret_file = v, true;
  if (o.Is("--webhook-min-severity")) {
    auto severity = protocol::ParseSeverity(v);
    if (!severity) return Error{"--webhook-min-severity wants info, warning or critical"};
    return c.monitor.webhooks.min_severity = *severity, true;
  }
  if (o.Is("--usage-interval")) {
    size_t ms = 0;
    if (!ParseCount(v, &ms) || ms < 50) return Error{"--usage-interval wants milliseconds, at least 50"};
    return c.monitor.usage_interval_ms = ms, true;
  }
  return false;
}

// The egress proxy of boxes with the network on (docs/network.md).
Took EgressOption(OptionCursor& o, ServeInputs& in) {
  for (const char* flag :
       {"--egress-resolve", "--egress-max-connections", "--egress-max-connections-total", "--egress-max-bytes", "--egress-max-bandwidth",
        "--egress-idle-timeout", "--secrets-file",
        "--egress-upstream-ca"})
    if (o.Is(flag)) return egress::ApplyEgressFlag(flag, o.value(), in.c.egress);
  return false;
}

// Every option in turn; nullopt when all were good, else the exit code (--help: 0).
std::optional<int> ParseServeArgs(const Args& args, ServeInputs& in) {
  OptionCursor o(args);
  while (o.Next()) {
    if (o.arg() == "--help" || o.arg() == "-h") {
      std::fputs(kServeUsage, stdout);
      std::fputs(kRegistryFlagsUsage, stdout);
      std::fputs(kServeUsageTail, stdout);
      return 0;
    }
    const std::string a = o.arg();
    bool took = false;
    for (auto group : {ServingOption, SizeOption, SessionQueueOption, PausedOption, AccessOption, ConnectionOption,
                       MonitoringOption, EgressOption}) {
      Took t = group(o, in);
      if (!t.ok()) return Bad(t.error().message);
      if ((took = *t)) break;
    }
    if (!took) return Bad("unknown option '" + a + "'");
  }
  return std::nullopt;
}

std::string ReadWhole(std::ifstream& in) {
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// --token-file, $LLM_SANDBOX_TOKENS, --generate-token.
Status SettleTokens(ServeInputs& in) {
  auto& tokens = in.c.tokens;
  if (!in.token_file.empty()) {
    std::ifstream f(in.token_file);
    if (!f) return Error{"--token-file " + in.token_file + ": cannot read it"};
    AddTokens(ReadWhole(f), '\n', tokens);
    if (tokens.empty()) return Error{"--token-file " + in.token_file + " has no token"};
  }
  if (const char* env = std::getenv("LLM_SANDBOX_TOKENS")) AddTokens(env, ',', tokens);
  if (!in.generate_token || !tokens.empty()) return OkStatus();
  auto tok = RandomToken();
  if (!tok.ok()) return tok.error().Wrap("--generate-token");
  tokens.insert(*tok);
  std::fprintf(stderr,
               "llm-sandbox serve: no token was given, so one was generated; every request needs\n"
               "  Authorization: Bearer %s\n"
               "(set LLM_SANDBOX_TOKENS or --token-file to choose your own)\n",
               tok->c_str());
  return OkStatus();
}

// --node-name, else $LLM_SANDBOX_NODE, else the hostname up to its first dot. A name given is
// checked (it goes into session ids and HTTP headers); a hostname is made to fit.
Status SettleNodeName(ServeInputs& in) {
  std::string& node = in.c.node_name;
  if (node.empty())
    if (const char* env = std::getenv("LLM_SANDBOX_NODE"); env != nullptr && *env != '\0') node = env;
  if (!node.empty()) {
    in.c.node_label = true;
    if (sched::IsNodeName(node)) return OkStatus();
    return Error{"--node-name / LLM_SANDBOX_NODE '" + node + "': use 1 to 63 letters, digits, - or _"};
  }
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return Error{"--node-name: no hostname; give one"};
  node = std::string(host).substr(0, std::string(host).find('.')).substr(0, 63);
  for (char& ch : node)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_')) ch = '-';
  return OkStatus();
}

// --webhook-secret-file or $LLM_SANDBOX_WEBHOOK_SECRET.
Status SettleWebhookSecret(ServeInputs& in) {
  auto& hooks = in.c.monitor.webhooks;
  if (!in.webhook_secret_file.empty()) {
    std::ifstream f(in.webhook_secret_file);
    if (!f) return Error{"--webhook-secret-file " + in.webhook_secret_file + ": cannot read it"};
    std::string text = ReadWhole(f);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (text.empty()) return Error{"--webhook-secret-file " + in.webhook_secret_file + " is empty"};
    hooks.secret = text;
  } else if (const char* env = std::getenv("LLM_SANDBOX_WEBHOOK_SECRET")) {
    hooks.secret = env;
  }
  if (!hooks.urls.empty() && hooks.secret.empty())
    std::fprintf(stderr, "llm-sandbox serve: warning: webhooks are not signed (no --webhook-secret-file)\n");
  return OkStatus();
}

// --max-body and --max-file together (body_limits.h).
Status SettleBodyLimits(ServeInputs& in) {
  auto sizes = server::ReconcileBodyLimits(in.max_body, in.max_file, in.c.limits.max_file_bytes);
  if (!sizes.ok()) return sizes.error();
  in.c.http.max_body = sizes->max_body;
  in.c.limits.max_file_bytes = sizes->max_file;
  if (!sizes->note.empty()) std::fprintf(stderr, "llm-sandbox serve: %s\n", sizes->note.c_str());
  return OkStatus();
}

void SettleAuditLog(ServeInputs& in) {
  if (!in.c.monitoring) return;
  if (in.audit_log && monitor::IsAuditLogOff(*in.audit_log)) {
    in.c.monitor.audit_path.clear();
  } else if (in.audit_log) {
    in.c.monitor.audit_path = *in.audit_log;
  } else {
    in.c.monitor.audit_path = DefaultAuditLog(in.c.http.host, in.c.http.port);
  }
}

}  // namespace

int ServeCommand(const Args& args) {
  ServeInputs in;
  // The environment gives the default backend (tests pin one this way); --backend overrides it.
  if (const char* env = std::getenv("LLM_SANDBOX_BACKEND"); env != nullptr && *env != '\0') in.c.backend = env;
  if (auto rc = ParseServeArgs(args, in)) return *rc;
  for (auto settle : {SettleTokens, SettleWebhookSecret, SettleBodyLimits, SettleNodeName})
    if (auto st = settle(in); !st.ok()) return Bad(st.error().message);
  SettleAuditLog(in);
  return server::RunDaemon(std::move(in.c));
}

}  // namespace lsb::cli
