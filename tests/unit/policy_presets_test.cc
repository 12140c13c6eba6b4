// Command presets (@coreutils...), built-in descriptions and the language a program file implies.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "policy/builtin_descriptions.h"
#include "policy/command_presets.h"
#include "runtime/policy_explain.h"
#include "policy/languages.h"
#include "policy/policy_loader.h"
#include "policy_parse_helpers.h"

namespace lsb {
namespace {

const std::string kSource = LSB_SOURCE_DIR;

std::string Yaml(const std::string& allow, const std::string& deny = "", const std::string& extra = "") {
  return "version: \"1.0\"\nname: t\ncommands:\n  allow: [" + allow + "]\n" +
         (deny.empty() ? "" : "  deny: [" + deny + "]\n") + "languages:\n  default: bash\n" + extra;
}

bool Has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

TEST(CommandPresets, ExpandIntoUsrBinAndBinPathsOfEachCommand) {
  Policy p = MustParse(Yaml("\"/bin/bash\", \"@coreutils\""));
  EXPECT_EQ(p.allow_presets, std::vector<std::string>{"@coreutils"});
  EXPECT_EQ(p.allow.front(), "/bin/bash");  // hand-written entries first, in order
  for (const char* c : {"mkdir", "seq", "tr", "cut", "date", "cat", "ls", "env", "timeout"}) {
    EXPECT_TRUE(Has(p.allow, std::string("/usr/bin/") + c)) << c;
    EXPECT_TRUE(Has(p.allow, std::string("/bin/") + c)) << c;
  }
  EXPECT_FALSE(Has(p.allow, "/usr/bin/find"));  // @findutils, not @coreutils
  // The same strings a hand-written entry would be: a clean absolute path each, no duplicates.
  std::set<std::string> unique(p.allow.begin(), p.allow.end());
  EXPECT_EQ(unique.size(), p.allow.size());
}

TEST(CommandPresets, OverlappingPresetsAndHandWrittenEntriesCountOnce) {
  Policy p = MustParse(Yaml("\"/bin/bash\", \"/usr/bin/sort\", \"@coreutils\", \"@text\""));
  EXPECT_EQ(std::count(p.allow.begin(), p.allow.end(), "/usr/bin/sort"), 1);
  EXPECT_EQ(std::count(p.allow.begin(), p.allow.end(), "/usr/bin/wc"), 1);  // in both presets
  EXPECT_TRUE(Has(p.allow, "/usr/bin/grep"));
}

TEST(CommandPresets, DenyWinsOverAPresetWhereverItIsWritten) {
  // deny before allow in the file, too: expansion happens after the whole file is read.
  Policy p = MustParse("version: \"1.0\"\nname: t\ncommands:\n  deny: [\"/usr/bin/env\", \"/bin/env\"]\n"
                       "  allow: [\"/bin/bash\", \"@coreutils\"]\nlanguages:\n  default: bash\n");
  EXPECT_FALSE(Has(p.allow, "/usr/bin/env"));
  EXPECT_FALSE(Has(p.allow, "/bin/env"));
  EXPECT_TRUE(Has(p.allow, "/usr/bin/nice"));
  EXPECT_TRUE(p.Denies("/usr/bin/env"));
  // A hand-written entry that is also denied is still the loader's error, as before presets.
  EXPECT_NE(ParseError(Yaml("\"/bin/bash\", \"/usr/bin/env\"", "\"/usr/bin/env\"")).find("both allowed"),
            std::string::npos);
}

TEST(CommandPresets, UnknownPresetIsALoadErrorListingTheValidOnes) {
  std::string e = ParseError(Yaml("\"/bin/bash\", \"@coretuils\""));
  EXPECT_NE(e.find("t.yaml:4:"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown preset '@coretuils'"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean '@coreutils'"), std::string::npos) << e;
  EXPECT_NE(e.find("@coreutils, @findutils, @text, @git"), std::string::npos) << e;
  EXPECT_NE(ParseError(Yaml("\"/bin/bash\", \"@\"")).find("unknown preset '@'"), std::string::npos);
}

TEST(CommandPresets, PresetListedTwiceOrInDenyIsAnError) {
  EXPECT_NE(ParseError(Yaml("\"/bin/bash\", \"@text\", \"@text\"")).find("'@text' is listed twice"),
            std::string::npos);
  EXPECT_NE(ParseError(Yaml("\"/bin/bash\"", "\"@git\"")).find("presets are for commands.allow only"),
            std::string::npos);
}

// The adversarial half: a preset must never let in a program that runs arbitrary code on its own
// (a shell, an interpreter, a multi-call binary holding a shell), nor a privilege tool. Programs
// that exec others (env, xargs...) are allowed only because every exec is judged again; the
// integration test RunPresets checks that on a real box.
TEST(CommandPresets, NoPresetNamesAShellInterpreterOrPrivilegeTool) {
  // Exact names, and prefixes for the versioned ones (python3.11, perl5.36...). No std::regex:
  // GCC 12's libstdc++ regex trips -Wmaybe-uninitialized under the sanitizer build's -Werror.
  const std::set<std::string> forbidden = {
      "sh",   "bash", "dash",    "zsh",    "ksh",   "mksh",    "csh",   "tcsh",  "fish",   "busybox", "toybox",
      "nodejs", "expect", "gdb", "ld.so", "sudo", "su",  "chroot", "nsenter", "unshare", "setpriv", "capsh",
      "stdbuf", "script", "socat", "nc",  "ncat", "netcat", "curl", "wget", "ssh",  "scp",   "vi",      "vim",
      "emacs", "less",  "more",  "man",   "nohup", "setsid", "flock", "strace", "ltrace"};
  const std::vector<std::string> forbidden_prefixes = {"python", "perl", "ruby", "node", "php",
                                                       "lua",    "tclsh", "wish", "ld-linux"};
  for (const auto& preset : CommandPresets()) {
    for (const auto& c : preset.commands) {
      bool prefixed = std::any_of(forbidden_prefixes.begin(), forbidden_prefixes.end(),
                                  [&](const std::string& p) { return c.rfind(p, 0) == 0; });
      EXPECT_FALSE(forbidden.count(c) || prefixed) << "@" << preset.name << " names " << c;
      EXPECT_EQ(c.find_first_of("/ *?[."), std::string::npos) << "@" << preset.name << ": '" << c << "'";
    }
  }
}

TEST(CommandPresets, DocsListEveryCommandOfEveryPreset) {
  std::ifstream in(kSource + "/docs/policy.md");
  std::stringstream docs;
  docs << in.rdbuf();
  for (const auto& preset : CommandPresets()) {
    std::string line = "| `@" + preset.name + "` |";
    size_t at = docs.str().find(line);
    ASSERT_NE(at, std::string::npos) << "docs/policy.md has no row for @" << preset.name;
    std::string row = docs.str().substr(at, docs.str().find('\n', at) - at);
    std::string expected;
    for (const auto& c : preset.commands) expected += (expected.empty() ? "" : " ") + c;
    EXPECT_NE(row.find(expected), std::string::npos) << row << "\nexpected: " << expected;
  }
}

TEST(CommandPresets, ExplainShowsPresetsAndTheirCommands) {
  Policy p = MustParse(Yaml("\"/bin/bash\", \"@findutils\"", "\"/usr/bin/xargs\""));
  std::string text = FormatExplanation(p);
  EXPECT_NE(text.find("commands.allow = /bin/bash, @findutils  [t.yaml:4:"), std::string::npos) << text;
  EXPECT_NE(text.find("commands.allow @findutils = find and xargs: find, xargs (2 commands; denied by "
                      "commands.deny, so left out: /usr/bin/xargs)"),
            std::string::npos)
      << text;
}

TEST(ShippedPolicies, BashToolsRunsTheCommonCommands) {
  auto p = LoadPolicyFile(kSource + "/policies/bash-tools.yaml");
  ASSERT_TRUE(p.ok()) << p.error().message;
  for (const char* c : {"mkdir", "seq", "tr", "cut", "find", "xargs", "date", "grep", "sed", "awk", "sort", "uniq",
                        "wc", "head", "tail", "cat", "ls"})
    EXPECT_TRUE(p->Allows(std::string("/usr/bin/") + c)) << c;
  EXPECT_FALSE(p->Allows("/usr/bin/python3"));
  EXPECT_FALSE(p->Allows("/usr/bin/perl"));
  EXPECT_TRUE(p->Denies("/usr/bin/curl"));
  EXPECT_FALSE(p->Allows("/usr/bin/curl"));
}

TEST(ShippedPolicies, EveryOneHasADescription) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(kSource + "/policies")) {
    if (e.path().extension() != ".yaml") continue;
    auto p = LoadPolicyFile(e.path().string());
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_FALSE(p->description.empty()) << e.path();
    ++n;
  }
  EXPECT_GE(n, 6u);
}

TEST(BuiltinDescriptions, SeedGetsOneWithoutEditingItsFile) {
  auto p = LoadPolicyFile(kSource + "/policies/code-sandbox.yaml");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->description, BuiltinDescription("code-sandbox"));
  EXPECT_FALSE(p->description.empty());
  EXPECT_EQ(p->positions.count("description"), 0u);  // not from the file
  // A description in the file wins; another name gets none.
  EXPECT_EQ(MustParse("version: \"1.0\"\nname: code-sandbox\ndescription: mine\n").description, "mine");
  EXPECT_EQ(MustParse("version: \"1.0\"\nname: other\n").description, "");
}

Policy Shell(const std::string& allow) {
  return MustParse("version: \"1.0\"\nname: t\ncommands:\n  allow: [" + allow + "]\nlanguages:\n  default: bash\n");
}

TEST(InferLanguage, FromTheProgramFilesExtension) {
  auto strict = LoadPolicyFile(kSource + "/policies/bash-tools.yaml");
  ASSERT_TRUE(strict.ok());
  EXPECT_EQ(InferLanguage(*strict, "t.py"), "python");  // bash-tools cannot run it: ResolveLanguage says so
  EXPECT_FALSE(ResolveLanguage(*strict, "python").ok());
  EXPECT_EQ(InferLanguage(*strict, "dir.d/run.sh"), "bash");
  EXPECT_EQ(InferLanguage(*strict, "x.mjs"), "node");
  EXPECT_EQ(InferLanguage(*strict, "x.js"), "node");
  EXPECT_EQ(InferLanguage(*strict, "-"), "");
  EXPECT_EQ(InferLanguage(*strict, "Makefile"), "");
  EXPECT_EQ(InferLanguage(*strict, ".bashrc"), "");
  EXPECT_EQ(InferLanguage(*strict, "notes.txt"), "");
}

TEST(InferLanguage, ShellScriptFallsBackToShAndPolicyLanguagesCount) {
  // research-trace allows /bin/sh and denies /bin/bash: a .sh file runs as sh there.
  auto trace = LoadPolicyFile(kSource + "/policies/research-trace.yaml");
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(InferLanguage(*trace, "t.sh"), "sh");
  EXPECT_EQ(InferLanguage(Shell("\"/bin/bash\", \"/bin/sh\""), "t.sh"), "bash");
  // A language the policy defines is found by its file's extension.
  Policy ruby = MustParse(
      "version: \"1.0\"\nname: t\ncommands:\n  allow: [\"/usr/bin/ruby\"]\nlanguages:\n  default: ruby\n"
      "  ruby: {command: [\"/usr/bin/ruby\", \"{file}\"], file: main.rb}\n");
  EXPECT_EQ(InferLanguage(ruby, "x.rb"), "ruby");
}

TEST(RunnableLanguages, OnlyThoseWhoseInterpreterIsAllowed) {
  auto p = LoadPolicyFile(kSource + "/policies/bash-tools.yaml");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(RunnableLanguages(*p), (std::vector<std::string>{"bash", "sh"}));
}

}  // namespace
}  // namespace lsb
