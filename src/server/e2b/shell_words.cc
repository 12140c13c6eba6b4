#include "server/e2b/shell_words.h"

#include <cstring>

namespace lsb::server::e2b {
namespace {

Error NeedsShell(char c) {
  std::string what = c == '\n' ? std::string("a newline") : std::string("'") + c + "'";
  Error e{"the command line has " + what +
          " outside quotes, which only a shell can interpret, and this sandbox's policy allows no /bin/bash; "
          "give a simple command (program and arguments, quoted as in sh), or use a template whose policy "
          "allows /bin/bash"};
  e.code = ErrorCode::kInvalidArgument;
  return e;
}

}  // namespace

Result<std::vector<std::string>> SplitSimpleCommand(const std::string& line) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  size_t i = 0;
  auto end_word = [&] {
    if (in_word) words.push_back(cur);
    cur.clear();
    in_word = false;
  };
  while (i < line.size()) {
    char c = line[i];
    if (c == ' ' || c == '\t') {
      end_word();
      ++i;
    } else if (c == '\'') {
      size_t close = line.find('\'', i + 1);
      if (close == std::string::npos) return Error{"the command line has an unterminated ' quote"};
      cur += line.substr(i + 1, close - i - 1);
      in_word = true;
      i = close + 1;
    } else if (c == '"') {
      ++i;
      in_word = true;
      for (;;) {
        if (i >= line.size()) return Error{"the command line has an unterminated \" quote"};
        char d = line[i];
        if (d == '"') {
          ++i;
          break;
        }
        if (d == '$' || d == '`') return NeedsShell(d);
        if (d == '\\' && i + 1 < line.size() && std::strchr("\"\\$`", line[i + 1])) {
          cur += line[i + 1];
          i += 2;
          continue;
        }
        cur += d;
        ++i;
      }
    } else if (c == '\\') {
      if (i + 1 >= line.size() || line[i + 1] == '\n') return NeedsShell('\\');
      cur += line[i + 1];
      in_word = true;
      i += 2;
    } else if (std::strchr("|&;<>()$`*?[]{}~#!\n\r", c)) {
      return NeedsShell(c);
    } else {
      cur += c;
      in_word = true;
      ++i;
    }
  }
  end_word();
  if (words.empty()) return Error{"the command line is empty; give a program to run"};
  // NAME=value first is an assignment to a shell: refused, never run as a program's name.
  size_t eq = words[0].find('=');
  if (eq != std::string::npos && eq > 0 && words[0].find('/') > eq) {
    Error e{"the command line starts with an assignment ('" + words[0].substr(0, eq + 1) +
            "...'), which only a shell interprets; pass the variable in the command's envs instead"};
    e.code = ErrorCode::kInvalidArgument;
    return e;
  }
  return words;
}

}  // namespace lsb::server::e2b
