// One function per subcommand, each in its own file; main.cc only dispatches.
// Each takes the arguments after the subcommand name and returns the process exit code.
#pragma once

#include <string>
#include <vector>

namespace lsb::cli {

using Args = std::vector<std::string>;

int RunCommand(const Args& args);     // run_cmd.cc: llm-sandbox run
int PolicyCommand(const Args& args);  // policy_cmd.cc: llm-sandbox policy check|explain
int ServeCommand(const Args& args);   // serve_cmd.cc: llm-sandbox serve (the HTTP daemon)
int LogsCommand(const Args& args);    // logs_cmd.cc: llm-sandbox logs (the audit log)
int McpCommand(const Args& args);     // mcp_cmd.cc: llm-sandbox mcp (MCP server on stdio)
int ImagePullCommand(const Args& args);  // image_pull_cmd.cc: llm-sandbox image pull
int ImageBuildCommand(const Args& args);  // image_build_cmd.cc: llm-sandbox image build
int ImageCreateCommand(const Args& args);  // image_create_cmd.cc: llm-sandbox image create (a rootfs)
int ReadyCommand(const Args& args);   // ready_cmd.cc: llm-sandbox ready (the image's health check)
// image_docker_cmd.cc: image ls|prune --docker, the engine's images container.build made.
int ImageDockerCommand(const std::string& sub, bool as_json);
// image inspect --docker REF (image_docker_cmd.cc).
int ImageDockerInspect(const std::string& reference, bool as_json);
int ImageCommand(const Args& args);   // image_cmd.cc: llm-sandbox image import|ls|inspect|rm|prune

}  // namespace lsb::cli
