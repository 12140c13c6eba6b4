// A command run BY the sandbox's persistent interpreter (docs/e2b.md "Commands"), so that
// commands and runCode share one box without restarting the interpreter (init runs one program
// at a time per box, and the interpreter is that program). The host has already judged the argv
// (commands.allow, CheckCommand) and the environment (env_rules, BuildRunSpec); inside the box the
// exec watch judges the program again like any other. The cell relays the program's stdout and
// stderr as they come (the session streams the interpreter's output live), kills its process
// group at `timeout_ms` or once `output_cap` bytes were relayed (saying so on stderr, exit 137),
// and ends the cell with the program's exit code (128 + signal for a signal) as SystemExit. It
// runs in the session's globals and leaves no name in them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lsb::server::e2b {

struct CommandCell {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // over the interpreter's own environment
  std::string cwd;
  uint64_t timeout_ms = 0;
  uint64_t output_cap = 0;
};

std::string CommandCellSource(const CommandCell& c);

// A cell that sets `env` in the interpreter's os.environ (a null value removes the name), leaving
// no name behind (src/inbox/e2b_env.py); with `report`, it first prints the values those names had
// as a JSON object, which a later EnvCellSource puts back.
std::string EnvCellSource(const nlohmann::json& env, bool report);

}  // namespace lsb::server::e2b
