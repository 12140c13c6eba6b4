// init's own diagnostics: one line to fd 2, never to fd 1 (which carries only frames).
#pragma once

#include <unistd.h>

#include <string>
#include <string_view>

namespace lsb::init {

inline void Diag(std::string_view msg) {
  std::string line = "llm-sandbox-init: ";
  line.append(msg);
  line.push_back('\n');
  ssize_t n = ::write(2, line.data(), line.size());
  (void)n;
}

}  // namespace lsb::init
