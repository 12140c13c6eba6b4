#include "init/exec_policy.h"

#include <gtest/gtest.h>

namespace lsb::init {
namespace {

TEST(JoinPath, NormalizesLexically) {
  EXPECT_EQ(JoinPath("/tmp/a", "../b"), "/tmp/b");
  EXPECT_EQ(JoinPath("/tmp", "/bin//sh"), "/bin/sh");
  EXPECT_EQ(JoinPath("/", "./x/./y/"), "/x/y");
  EXPECT_EQ(JoinPath("/a", "../../.."), "/");
}

TEST(ExecPolicy, DecidesAllowedDeniedAbsentAndUnlisted) {
  ExecPolicy p({"/usr/bin/python3.11"}, {"/usr/bin/dash"}, {"/bin/sh"}, {"/usr/lib/ld.so"});
  EXPECT_TRUE(p.Decide("/usr/bin/python3", std::string("/usr/bin/python3.11")).allow);
  auto sh = p.Decide("/bin/sh", std::string("/usr/bin/dash"));
  EXPECT_FALSE(sh.allow);
  EXPECT_TRUE(sh.listed_in_deny);
  auto via_other_name = p.Decide("/usr/bin/sh", std::string("/usr/bin/dash"));
  EXPECT_FALSE(via_other_name.allow);
  EXPECT_TRUE(via_other_name.listed_in_deny);
  auto ldso = p.Decide("/lib64/ld.so", std::string("/usr/lib/ld.so"));
  EXPECT_FALSE(ldso.allow);  // interpreters get EXECUTE for the kernel, not as commands
  EXPECT_FALSE(ldso.listed_in_deny);
  EXPECT_EQ(ldso.reason, "not in commands.allow");
  EXPECT_TRUE(p.Decide("/nonexistent", std::nullopt).allow);  // the kernel says ENOENT
  EXPECT_FALSE(p.Decide("/bin/sh", std::nullopt).allow);       // listed: refused even if absent
}

TEST(ExecPolicy, ResolvesSymlinksAndInterpretersOnThisHost) {
  std::vector<std::string> warnings;
  auto p = ExecPolicy::Resolve({"/usr/bin/python3", "/does/not/exist"}, {"/bin/sh"},
                               [&](const std::string& w) { warnings.push_back(w); });
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p->allowed().size(), 1u);
  EXPECT_EQ(p->allowed().begin()->rfind("/usr/bin/python3", 0), 0u);
  EXPECT_FALSE(p->support().empty());  // ld-linux
  EXPECT_EQ(warnings.size(), 1u);
  EXPECT_FALSE(ExecPolicy::Resolve({"relative"}, {}, [](const std::string&) {}).ok());
}

TEST(ExecPolicy, DenyWinsOverAllow) {
  auto p = ExecPolicy::Resolve({"/bin/sh"}, {"/bin/sh"}, [](const std::string&) {});
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->allowed().empty());
}

}  // namespace
}  // namespace lsb::init
