// llm-sandbox-init: PID 1 of every box. Placeholder until the supervisor lands.
#include <cstdio>
int main() {
  std::fputs("llm-sandbox-init: not built yet\n", stderr);
  return 70;
}
