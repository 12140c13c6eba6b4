// A command line as the E2B SDK sends it (`/bin/bash -l -c "<line>"`) for a policy without a
// shell: the line is split into words here, the way a POSIX shell splits a SIMPLE command (blanks
// separate words; '...' is literal; "..." keeps blanks and takes \" \\ \$ \` escapes; a backslash
// outside quotes escapes the next character), and the words run as a command under the policy's
// allowlist. Anything that needs a shell to mean what it says (pipes, redirections, ;, &, $...,
// `...`, globs, ~, comments, VAR=value prefixes) is refused with what to do instead: nothing is
// reinterpreted.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"

namespace lsb::server::e2b {

Result<std::vector<std::string>> SplitSimpleCommand(const std::string& line);

}  // namespace lsb::server::e2b
