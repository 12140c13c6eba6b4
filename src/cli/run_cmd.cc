#include <cstdio>

#include "cli/commands.h"

namespace lsb::cli {
int RunCommand(const Args&) {
  std::fputs("llm-sandbox run: not built yet\n", stderr);
  return 70;
}
}  // namespace lsb::cli
