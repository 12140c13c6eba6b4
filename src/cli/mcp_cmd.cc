// llm-sandbox mcp: the MCP server over stdio (newline-delimited JSON-RPC on stdin/stdout), for MCP
// clients that start their servers as subprocesses. The tools and dispatch are the daemon's
// (server/mcp_protocol.h); executions run in this process on a backend, through the same
// library parts as the daemon (policies, executor, sessions) without any HTTP listener.
// stdout carries protocol messages only: fd 1 is pointed at stderr for everything else, and the
// messages go to a private copy of the original stdout. Logs go to stderr.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "base/bounded_json.h"
#include "cli/commands.h"
#include "cli/registry_flags.h"
#include "runtime/backend_select.h"
#include "scheduler/box_registry.h"
#include "scheduler/executor.h"
#include "scheduler/policy_store.h"
#include "scheduler/session/session_manager.h"
#include "server/mcp_protocol.h"
#include "server/server_context.h"

namespace lsb::cli {
namespace {

constexpr const char* kMcpUsage =
    "usage: llm-sandbox mcp [options]\n"
    "\n"
    "An MCP server on stdin/stdout (JSON-RPC 2.0, one message per line) with the tools execute_code,\n"
    "list_policies, session_create, session_execute and session_close. Logs go to stderr.\n"
    "\n"
    "  --policies DIR           policy directory (default: ./policies or /etc/llm-sandbox/policies)\n"
    "  --default-policy NAME    policy of calls that name none (default code-sandbox)\n"
    "  --images FILE            native backend image map (config/images.yaml)\n"
    "  --backend auto|native|docker   (default auto)\n"
    "  --max-concurrency N      executions at once (default 2)\n"
    "  --max-sessions N         sessions at once (default 16)\n"
    "\n"
    "images not in the image map come from the image store, pulled when the policy's container.pull\n"
    "says so (docs/images.md):\n";

void Log(const std::string& line) { std::fprintf(stderr, "mcp: %s\n", line.c_str()); }

int Bad(const std::string& msg) {
  std::fprintf(stderr, "llm-sandbox mcp: %s\n\n%s%s", msg.c_str(), kMcpUsage, kRegistryFlagsUsage);
  return 2;
}

bool ParseCount(const std::string& v, size_t* out) {
  char* end = nullptr;
  unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n == 0) return false;
  *out = static_cast<size_t>(n);
  return true;
}

// A message is one line; a line longer than this is read to its end and dropped, never kept
// whole (the same as the daemon's default --max-body; base/bounded_json.h).
constexpr size_t kMaxMessageBytes = kJsonMaxBytes;

// Newline-delimited lines of a fd, each kept to at most `cap` bytes.
class LineReader {
 public:
  LineReader(int fd, size_t cap) : fd_(fd), cap_(cap) {}
  // The next line without its '\n' (a last line without one counts); false at the end of input.
  // *too_long: the line was longer than the cap; `line` then holds only its first cap bytes.
  bool Next(std::string* line, bool* too_long) {
    line->clear();
    *too_long = false;
    bool any = false;
    for (;;) {
      if (pos_ == len_) {
        ssize_t n = ::read(fd_, buf_, sizeof buf_);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return any;
        pos_ = 0;
        len_ = static_cast<size_t>(n);
      }
      any = true;
      const char* start = buf_ + pos_;
      const char* nl = static_cast<const char*>(std::memchr(start, '\n', len_ - pos_));
      size_t take = nl ? static_cast<size_t>(nl - start) : len_ - pos_;
      size_t room = cap_ - std::min(cap_, line->size());
      if (take > room) *too_long = true;
      line->append(start, std::min(take, room));
      pos_ += take + (nl ? 1 : 0);
      if (nl) return true;
    }
  }

 private:
  int fd_;
  size_t cap_;
  char buf_[65536];
  size_t pos_ = 0, len_ = 0;
};

}  // namespace

int McpCommand(const Args& args) {
  std::string policies_dir, images_file, store_dir, backend_name = "auto";
  image::PullOptions pull;
  // As for serve: the environment gives the default backend; --backend overrides it.
  if (const char* env = std::getenv("LLM_SANDBOX_BACKEND"); env != nullptr && *env != '\0') backend_name = env;
  server::ServerLimits limits;
  size_t workers = 2, max_sessions = 16;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kMcpUsage, stdout);
      std::fputs(kRegistryFlagsUsage, stdout);
      return 0;
    }
    if (i + 1 >= args.size()) return Bad("unknown option or missing value: " + a);
    const std::string& v = args[++i];
    if (a == "--policies") {
      policies_dir = v;
    } else if (a == "--images") {
      images_file = v;
    } else if (a == "--backend") {
      backend_name = v;
    } else if (a == "--store") {
      store_dir = v;
    } else if (std::find(RegistryFlagNames().begin(), RegistryFlagNames().end(), a) != RegistryFlagNames().end()) {
      ApplyRegistryFlag(a, v, pull);
    } else if (a == "--default-policy") {
      limits.default_policy = v;
    } else if (a == "--max-concurrency") {
      if (!ParseCount(v, &workers)) return Bad("--max-concurrency: a positive number");
    } else if (a == "--max-sessions") {
      if (!ParseCount(v, &max_sessions)) return Bad("--max-sessions: a positive number");
    } else {
      return Bad("unknown option: " + a);
    }
  }

  // Protocol messages go to a private copy of stdout; fd 1 now reaches stderr, so nothing a library
  // prints can corrupt the stream.
  int proto_fd = ::dup(STDOUT_FILENO);
  if (proto_fd < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    std::perror("llm-sandbox mcp: dup stdout");
    return 2;
  }
  FILE* proto = ::fdopen(proto_fd, "w");
  if (!proto) {
    std::perror("llm-sandbox mcp: fdopen");
    return 2;
  }

  if (policies_dir.empty()) policies_dir = sched::DefaultPolicyDir();
  if (policies_dir.empty()) return Bad("no policy directory found (./policies, /etc/llm-sandbox/policies); pass --policies DIR");
  sched::PolicyStore policies(policies_dir);
  auto loaded = policies.Reload();
  if (!loaded.ok()) {
    std::fprintf(stderr, "llm-sandbox mcp: cannot load policies:\n%s\n", loaded.error().message.c_str());
    return 2;
  }
  if (!policies.Find(limits.default_policy))
    Log("warning: the default policy '" + limits.default_policy + "' is not in " + policies_dir +
        "; calls must name a policy");
  BackendOptions bopts;
  bopts.images_file = images_file;
  if (auto st = WireImageStore(store_dir, pull, bopts); !st.ok()) return Bad(st.error().message);
  std::string why;
  auto backend = MakeBackend(backend_name, bopts, &why);
  if (!backend.ok()) {
    std::fprintf(stderr, "llm-sandbox mcp: backend: %s\n", backend.error().message.c_str());
    return 2;
  }
  if (!why.empty()) Log(why);

  // SIGTERM/SIGINT: kill the boxes and close the sessions before leaving (the boxes are ours).
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  ::pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  sched::Executor executor(workers, 4 * workers);
  sched::BoxRegistry boxes;
  sched::SessionManager sessions(max_sessions);
  sessions.StartReaper();
  server::ServerContext ctx{**backend, policies, executor, boxes, sessions, limits, {}};
  server::mcp::McpServer mcp(server::mcp::InProcessApi(ctx, /*owner=*/""));

  std::thread signals([&] {
    int sig = 0;
    while (sigwait(&sigs, &sig) != 0) {
    }
    Log(std::string("signal ") + strsignal(sig) + ": killing boxes and closing sessions");
    boxes.KillAll();
    sessions.Shutdown();
    std::_Exit(0);
  });
  signals.detach();

  Log("ready on stdio (backend " + (*backend)->name() + ", " + std::to_string(*loaded) + " policies from " +
      policies_dir + ")");
  std::string line;
  bool too_long = false;
  LineReader in(STDIN_FILENO, kMaxMessageBytes);
  while (in.Next(&line, &too_long)) {
    std::optional<nlohmann::json> answer;
    if (too_long) {
      answer = server::mcp::RefusalMessage({JsonErrorKind::kTooLarge, kMaxMessageBytes,
                                            "the message is longer than the limit of " +
                                                std::to_string(kMaxMessageBytes) + " bytes"});
    } else {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      answer = mcp.HandleText(line);
    }
    if (!answer) continue;
    std::string out = answer->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    out += '\n';
    if (std::fwrite(out.data(), 1, out.size(), proto) != out.size() || std::fflush(proto) != 0) {
      Log("stdout closed; stopping");
      break;
    }
  }
  Log("stdin closed; stopping");
  executor.StopAccepting();
  executor.Shutdown();
  sessions.Shutdown();
  std::fclose(proto);
  return 0;
}

}  // namespace lsb::cli
