#include "scheduler/driver/repl_messages.h"

#include <algorithm>

namespace lsb::sched {
namespace {

// `text` without NULs, plus the "\n" the driver strips again.
std::string Lines(std::string_view text) {
  std::string s;
  s.reserve(text.size() + 1);
  for (char c : text)
    if (c != '\0') s += c;
  s += '\n';
  return s;
}

std::string Counts(const std::string& lines) {
  return std::to_string(lines.size()) + " " + std::to_string(std::count(lines.begin(), lines.end(), '\n'));
}

}  // namespace

ReplMessage ShellMessage(std::string_view code, std::string_view stdin_data) {
  ReplMessage m;
  m.body = Lines(code);
  std::string in = stdin_data.empty() ? std::string() : Lines(stdin_data);
  m.header = Counts(m.body) + " " + (in.empty() ? std::string("0 0") : Counts(in)) + "\n";
  m.body += in;
  return m;
}

std::string ShellCommandLine(const std::vector<std::string>& argv) {
  std::string s = "command";
  for (const auto& a : argv) {
    s += " '";
    for (char c : a) s += c == '\'' ? std::string("'\\''") : std::string(1, c);
    s += "'";
  }
  return s;
}

ReplMessage NodeMessage(std::string_view code, std::string_view stdin_data) {
  ReplMessage m;
  m.header = "X " + std::to_string(code.size()) + " " + std::to_string(stdin_data.size()) + "\n";
  m.body.reserve(code.size() + stdin_data.size());
  m.body.append(code).append(stdin_data);
  return m;
}

}  // namespace lsb::sched
