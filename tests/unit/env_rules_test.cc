#include "policy/env_rules.h"

#include <gtest/gtest.h>

namespace lsb::env {
namespace {

using Env = std::map<std::string, std::string>;

TEST(EnvRules, RefusedEverywhereLoaderAndGlibcVariables) {
  for (const char* n : {"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "LD_", "GLIBC_TUNABLES", "GCONV_PATH",
                        "LOCPATH", "NLSPATH", "MALLOC_TRACE"}) {
    EXPECT_TRUE(Refuse(n, "x", Source::kPolicy)) << n;
    EXPECT_TRUE(Refuse(n, "x", Source::kRequest)) << n;
  }
  // Not the loader's: ld.so reads LD_* with that exact case only.
  EXPECT_FALSE(Refuse("ld_preload", "x", Source::kRequest));
  EXPECT_FALSE(Refuse("OLD_PRELOAD", "x", Source::kRequest));
  EXPECT_FALSE(Refuse("TMPDIR", "/tmp", Source::kRequest));
}

TEST(EnvRules, StartupHooksOnlyFromThePolicy) {
  for (const char* n : {"PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONINSPECT", "BASH_ENV", "ENV",
                        "NODE_OPTIONS", "PERL5OPT", "RUBYOPT", "JAVA_TOOL_OPTIONS", "PS4"}) {
    EXPECT_FALSE(Refuse(n, "x", Source::kPolicy)) << n;
    auto r = Refuse(n, "x", Source::kRequest);
    ASSERT_TRUE(r) << n;
    EXPECT_NE(r->why.find("start-up hook"), std::string::npos) << r->why;
  }
  for (const char* n : {"PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "LANG", "MODE", "_x1"})
    EXPECT_FALSE(Refuse(n, "1", Source::kRequest)) << n;
}

TEST(EnvRules, NamesValuesAndBounds) {
  for (std::string n : {std::string(""), std::string("1A"), std::string("A=B"), std::string("A B"), std::string("A-B"),
                        std::string("A\0B", 3), std::string("Ä"), std::string(kEnvLimits.max_name_bytes + 1, 'A')})
    EXPECT_TRUE(Refuse(n, "x", Source::kPolicy)) << n;
  EXPECT_FALSE(Refuse(std::string(kEnvLimits.max_name_bytes, 'A'), "x", Source::kPolicy));
  EXPECT_TRUE(Refuse("V", std::string("a\0b", 3), Source::kRequest));
  EXPECT_TRUE(Refuse("V", std::string(kEnvLimits.max_value_bytes + 1, 'v'), Source::kRequest));
  EXPECT_FALSE(Refuse("V", std::string(kEnvLimits.max_value_bytes, 'v'), Source::kRequest));
  EXPECT_FALSE(Refuse("V", "a=b\nc", Source::kRequest));  // '=' and newlines are fine in a value

  Env many;
  for (size_t i = 0; i <= kEnvLimits.max_vars; ++i) many["V" + std::to_string(i)] = "x";
  auto r = CheckRequestEnv({}, many);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kResourceExhausted);
  EXPECT_EQ(r.error().field, "env");
  EXPECT_NE(r.error().message.find("variables; the limit is"), std::string::npos) << r.error().message;
  EXPECT_FALSE(CheckRunEnv(many).ok());

  Env big;  // each value within its bound, the whole over the total
  for (int i = 0; i < 9; ++i) big["V" + std::to_string(i)] = std::string(kEnvLimits.max_value_bytes, 'v');
  r = CheckRequestEnv({}, big);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("bytes of names and values"), std::string::npos) << r.error().message;
  // The policy's variables count toward the request's bounds.
  Env policy;
  for (size_t i = 0; i < kEnvLimits.max_vars; ++i) policy["P" + std::to_string(i)] = "x";
  EXPECT_TRUE(CheckRequestEnv(policy, {}).ok());
  EXPECT_FALSE(CheckRequestEnv(policy, {{"ONE_MORE", "x"}}).ok());
}

TEST(EnvRules, ARequestMayNotReplaceThePolicyOrInit) {
  Env policy = {{"LANG", "C.UTF-8"}, {"PYTHONPATH", "/opt/lib"}};
  EXPECT_TRUE(CheckRequestEnv(policy, {{"MODE", "test"}}).ok());
  for (const char* n : {"LANG", "PYTHONPATH", "PATH", "HOME"}) {
    auto r = CheckRequestEnv(policy, {{n, "/tmp"}});
    ASSERT_FALSE(r.ok()) << n;
    // PYTHONPATH is a start-up hook, refused in any request (a bad argument); the others would
    // replace what the policy or init set (a loosening).
    EXPECT_EQ(r.error().code, std::string(n) == "PYTHONPATH" ? ErrorCode::kInvalidArgument : ErrorCode::kPermissionDenied)
        << n;
    EXPECT_EQ(r.error().field, std::string("env.") + n);
    EXPECT_EQ(r.error().message.rfind(std::string("env.") + n + ": refused", 0), 0u) << r.error().message;
  }
}

TEST(EnvRules, InitsCheckIsThePolicyRules) {
  EXPECT_TRUE(CheckRunEnv({{"PYTHONPATH", "/opt/lib"}, {"PATH", "/bin"}, {"HOME", "/tmp"}}).ok());
  auto r = CheckRunEnv({{"A", "1"}, {"LD_PRELOAD", "/x.so"}});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().IsInvalidArgument());
  EXPECT_EQ(r.error().field, "env.LD_PRELOAD");
  EXPECT_NE(r.error().message.find("env.LD_PRELOAD"), std::string::npos) << r.error().message;
  // A name with a control byte is shown without it.
  r = CheckRunEnv({{std::string("A\nB"), "1"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace lsb::env
