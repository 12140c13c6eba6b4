// The bash/sh/node session drivers' pure parts: their execute messages, which policies get one,
// and the answer status parse every driver shares (driver_wire.h).
#include <gtest/gtest.h>

#include "policy/policy.h"
#include "scheduler/driver/driver_wire.h"
#include "scheduler/driver/repl_driver.h"
#include "scheduler/driver/repl_messages.h"

namespace lsb::sched {
namespace {

TEST(ReplMessages, ShellCountsBytesAndLinesOfCodePlusNewline) {
  ReplMessage m = ShellMessage("echo a\necho b", "");
  EXPECT_EQ(m.header, "14 2 0 0\n");
  EXPECT_EQ(m.body, "echo a\necho b\n");
}

TEST(ReplMessages, ShellCodeEndingInNewlineKeepsIt) {
  ReplMessage m = ShellMessage("x=1\n", "");
  EXPECT_EQ(m.header, "5 2 0 0\n");
  EXPECT_EQ(m.body, "x=1\n\n");
}

TEST(ReplMessages, ShellStdinFollowsTheCode) {
  ReplMessage m = ShellMessage("cat", "l1\nl2");
  EXPECT_EQ(m.header, "4 1 6 2\n");
  EXPECT_EQ(m.body, "cat\nl1\nl2\n");
}

TEST(ReplMessages, ShellDropsNulBytes) {
  ReplMessage m = ShellMessage(std::string("a\0b", 3), std::string("\0", 1));
  EXPECT_EQ(m.header, "3 1 1 1\n");
  EXPECT_EQ(m.body, "ab\n\n");
}

TEST(ReplMessages, NodeIsLengthPrefixedBytes) {
  ReplMessage m = NodeMessage(std::string("x\0y", 3), "in");
  EXPECT_EQ(m.header, "X 3 2\n");
  EXPECT_EQ(m.body, std::string("x\0yin", 5));
}

TEST(ReplMessages, ACommandLineIsQuotedWordByWord) {
  EXPECT_EQ(ShellCommandLine({"ls", "-l", "a b"}), "command 'ls' '-l' 'a b'");
  EXPECT_EQ(ShellCommandLine({"echo", "it's $HOME `x`"}), "command 'echo' 'it'\\''s $HOME `x`'");
}

Policy PolicyWith(const std::vector<std::string>& allow) {
  Policy p;
  p.name = "t";
  p.allow = allow;
  p.languages["bash"] = Language{"bash", {"/bin/bash", "{file}"}, "main.sh"};
  p.languages["sh"] = Language{"sh", {"/bin/sh", "{file}"}, "main.sh"};
  p.languages["node"] = Language{"node", {"/usr/bin/node", "{file}"}, "main.js"};
  p.languages["python"] = Language{"python", {"/usr/bin/python3", "{file}"}, "main.py"};
  return p;
}

TEST(ReplDriverSupported, NeedsAShellOrNodeTheCommandsAllow) {
  Policy p = PolicyWith({"/bin/bash", "/usr/bin/node", "/usr/bin/python3"});
  EXPECT_TRUE(ReplDriverSupported(p, "bash"));
  EXPECT_TRUE(ReplDriverSupported(p, "node"));
  EXPECT_FALSE(ReplDriverSupported(p, "sh"));      // /bin/sh not allowed
  EXPECT_FALSE(ReplDriverSupported(p, "python"));  // python has its own driver
  p.deny = {"/usr/bin/node"};
  EXPECT_FALSE(ReplDriverSupported(p, "node"));
}

TEST(ReplDriverSupported, ACommandThatRunsNoFileGetsPlainRuns) {
  Policy p = PolicyWith({"/bin/bash"});
  p.languages["bash"].command = {"/bin/bash", "-c", "{code}"};
  EXPECT_FALSE(ReplDriverSupported(p, "bash"));
}

TEST(DriverWire, AnswerStatusIsANumberUpTo255) {
  EXPECT_EQ(ParseAnswerStatus("0"), 0);
  EXPECT_EQ(ParseAnswerStatus("127"), 127);
  EXPECT_EQ(ParseAnswerStatus("256"), 255);
  EXPECT_EQ(ParseAnswerStatus("-1"), 255);
  EXPECT_EQ(ParseAnswerStatus("1x"), 255);
  EXPECT_EQ(ParseAnswerStatus(""), 255);
}

}  // namespace
}  // namespace lsb::sched
