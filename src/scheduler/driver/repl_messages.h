// The execute messages of the bash/sh and node session drivers (repl_driver.h), pure so they are
// unit-tested: what the host writes on the driver's stdin for one execute.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lsb::sched {

// One message, as header + body (the wire's two writes).
struct ReplMessage {
  std::string header;
  std::string body;
};

// src/inbox/shell_driver.sh: "<code bytes> <code lines> <stdin bytes> <stdin lines>\n", the code
// plus "\n", then (when there is stdin) the data plus "\n". bash reads by bytes, sh by lines. NUL
// bytes are dropped: a shell variable cannot hold one (bash would drop them and miscount).
ReplMessage ShellMessage(std::string_view code, std::string_view stdin_data);

// A command line (a request's "command") as the code of one shell execute: each word single-quoted,
// run with `command` (a function of the same name the session defined is not what runs).
std::string ShellCommandLine(const std::vector<std::string>& argv);

// src/inbox/node_driver.js: "X <code bytes> <stdin bytes>\n" code stdin.
ReplMessage NodeMessage(std::string_view code, std::string_view stdin_data);

}  // namespace lsb::sched
