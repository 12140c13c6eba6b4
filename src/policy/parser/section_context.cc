#include "policy/parser/section_context.h"

#include <algorithm>
#include <string_view>
#include <variant>

#include "policy/suggest.h"

namespace lsb::policy_parser {

// "/usr/bin/python3" yes; "python3", "/usr//bin", "/usr/bin/../bin/sh", "/tmp/" no. Sets `why`.
bool IsCleanAbsolutePath(const std::string& path, std::string* why) {
  if (path.empty() || path[0] != '/') {
    *why = "is not an absolute path";
    return false;
  }
  if (path.find_first_of("*?[") != std::string::npos) {
    *why = "contains a wildcard; patterns are not supported";
    return false;
  }
  if (path.size() > 1 && path.back() == '/') {
    *why = "ends with '/'";
    return false;
  }
  size_t start = 1;
  while (start < path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    std::string part = path.substr(start, slash - start);
    if (part.empty() || part == "." || part == "..") {
      *why = "has an empty, '.' or '..' component";
      return false;
    }
    start = slash + 1;
  }
  return true;
}

bool IsUnder(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

namespace {

// The controls set as read (a bool or a string), by path; those with a check or sub-structure
// are each section's own.
struct PlainControl {
  std::string_view path;
  std::variant<bool Policy::*, std::string Policy::*> slot;
};
constexpr PlainControl kPlainControls[] = {
    {"description", &Policy::description},
    {"container.image", &Policy::image},
    {"container.gvisor_accept_weaker", &Policy::gvisor_accept_weaker},
    {"container.user_namespace", &Policy::user_namespace},
    {"network.enabled", &Policy::network_enabled},
    {"monitoring.trace", &Policy::trace},
};

}  // namespace

bool SectionParser::SetPlain(const Field& f) {
  for (const PlainControl& c : kPlainControls) {
    if (f.path != c.path) continue;
    if (auto* flag = std::get_if<bool Policy::*>(&c.slot)) {
      if (auto b = r_.Bool(f)) Set(f, p_.**flag, *b);
    } else if (auto s = r_.String(f)) {
      Set(f, p_.*std::get<std::string Policy::*>(c.slot), *s);
    }
    return true;
  }
  return false;
}

void SectionParser::Choice(const Field& f, const std::vector<std::string>& options, std::string& slot, const std::string& note) {
  auto s = r_.String(f);
  if (!s) return;
  if (std::find(options.begin(), options.end(), *s) == options.end()) {
    std::string guess = ClosestMatch(*s, options);
    r_.Report(f.mark(), f.path + ": unknown value '" + *s + "'",
              (guess.empty() ? std::string() : "did you mean '" + guess + "'? ") + "write one of: " +
                  JoinList(options) + (note.empty() ? "" : " (" + note + ")"));
    return;
  }
  Set(f, slot, *s);
}

void SectionParser::Bad(const Field& f, const std::string& message, const std::string& hint) {
  r_.Report(f.mark(), f.path + ": " + message, hint);
}

void SectionParser::Unread(const Field& f) {
  r_.Report(f.key.Mark(), f.path + ": this llm-sandbox knows the key but does not read it",
            "remove it; a control's row in policy/controls.h needs its parsing in policy/parser/ "
            "(docs/architecture.md \"How to add a control\")");
}

}  // namespace lsb::policy_parser
