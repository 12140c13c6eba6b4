// llm-sandbox: a thin CLI over the library. Subcommands live one per file (commands.h).
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/commands.h"
#include "cli/config_file.h"

namespace {

constexpr const char* kUsage =
    "usage: llm-sandbox <command> [options]\n"
    "\n"
    "commands:\n"
    "  run [--policy FILE|NAME] [--lang LANG] [--json] [FILE|-]   run a program in a sandbox\n"
    "  policy check FILE                                          validate a policy\n"
    "  policy explain FILE|NAME                                   how each control is enforced\n"
    "  serve [--listen HOST:PORT] [--policies DIR] ...             the HTTP daemon (docs/api.md)\n"
    "  logs [--file FILE] [--policy P] [--rule R] [-f] ...         read/filter/follow the audit log\n"
    "  mcp [--policies DIR] [--images FILE] ...                   MCP server on stdin/stdout\n"
    "  image pull|build|create|import|ls|inspect|rm|prune ...    the image store (docs/images.md)\n"
    "  ready [--port PORT]                                        exit 0 if the local daemon is ready\n"
    "  version                                                    print the version\n"
    "\n"
    "Run 'llm-sandbox <command> --help' for a command's options.\n"
    "\n"
    "Defaults come from ~/.config/llm-sandbox/config.yaml, then /etc/llm-sandbox/config.yaml (or only\n"
    "$LLM_SANDBOX_CONFIG): policy_dir, images, state_dir, image_store, audit_log...\n"
    "(docs/configuration.md); an environment variable wins over them, a flag over everything.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string cmd = argv[1];
  lsb::cli::Args args(argv + 2, argv + argc);
  if (cmd == "version" || cmd == "--version") {
    std::printf("llm-sandbox %s\n", LSB_VERSION);
    return 0;
  }
  // Before any command reads a variable: the files fill the ones the environment left unset.
  if (lsb::Status st = lsb::cli::ApplyConfigFiles(); !st.ok()) {
    std::fprintf(stderr, "llm-sandbox: %s\n", st.error().message.c_str());
    return 2;
  }
  if (cmd == "run") return lsb::cli::RunCommand(args);
  if (cmd == "policy") return lsb::cli::PolicyCommand(args);
  if (cmd == "serve") return lsb::cli::ServeCommand(args);
  if (cmd == "logs") return lsb::cli::LogsCommand(args);
  if (cmd == "mcp") return lsb::cli::McpCommand(args);
  if (cmd == "image" && !args.empty() && args[0] == "pull")
    return lsb::cli::ImagePullCommand(lsb::cli::Args(args.begin() + 1, args.end()));
  if (cmd == "image" && !args.empty() && args[0] == "build")
    return lsb::cli::ImageBuildCommand(lsb::cli::Args(args.begin() + 1, args.end()));
  if (cmd == "image" && !args.empty() && args[0] == "create")
    return lsb::cli::ImageCreateCommand(lsb::cli::Args(args.begin() + 1, args.end()));
  if (cmd == "image") return lsb::cli::ImageCommand(args);
  if (cmd == "ready") return lsb::cli::ReadyCommand(args);
  std::fprintf(stderr, "llm-sandbox: unknown command '%s'\n\n%s", cmd.c_str(), kUsage);
  return 2;
}
