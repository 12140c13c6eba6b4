// session.setup in a policy (docs/policy.md "session"): read as written, bounded, unknown keys
// refused.
#include <gtest/gtest.h>

#include <string>

#include "policy_parse_helpers.h"

namespace lsb {
namespace {

const std::string kBase = "version: \"1.0\"\nname: t\n";

TEST(PolicySession, SetupIsReadAsWritten) {
  Policy p = MustParse(kBase + "session:\n  setup: \"import decimal\\nX = 1\"\n");
  EXPECT_EQ(p.session_setup, "import decimal\nX = 1");
}

TEST(PolicySession, NoSetupByDefault) { EXPECT_EQ(MustParse(kBase).session_setup, ""); }

TEST(PolicySession, UnknownKeyIsRefused) {
  EXPECT_NE(ParseError(kBase + "session:\n  warm: true\n").find("warm"), std::string::npos);
}

TEST(PolicySession, SetupOver64KiBIsRefused) {
  std::string big(65 << 10, 'x');
  EXPECT_NE(ParseError(kBase + "session:\n  setup: \"" + big + "\"\n").find("the limit is 65536"), std::string::npos);
}

}  // namespace
}  // namespace lsb
