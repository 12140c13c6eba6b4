// session: the Python a python session runs once when it starts.
#include <cstddef>
#include <string>

#include "policy/parser/section_context.h"

namespace lsb::policy_parser {
namespace {

// session.setup is Python source a session's interpreter runs once; bounded like a request's code.
constexpr size_t kMaxSessionSetupBytes = 64 << 10;

}  // namespace

void SectionParser::SessionSetup(const Field& f) {
  if (f.key.Scalar() != "setup") return Unread(f);
  auto code = r_.String(f);
  if (!code) return;
  if (code->size() > kMaxSessionSetupBytes) {
    r_.Report(f.mark(), "session.setup is " + std::to_string(code->size()) + " bytes; the limit is " +
                            std::to_string(kMaxSessionSetupBytes),
              "keep the setup to imports and small state; ship data as files instead");
    return;
  }
  Set(f, p_.session_setup, *code);
}

}  // namespace lsb::policy_parser
