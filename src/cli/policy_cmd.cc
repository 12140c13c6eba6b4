#include <cstdio>

#include "cli/commands.h"

namespace lsb::cli {
int PolicyCommand(const Args&) {
  std::fputs("llm-sandbox policy: not built yet\n", stderr);
  return 70;
}
}  // namespace lsb::cli
