// Data-driven: every tests/policies/bad/*.yaml starts with one or more comment lines
//   # expect: LINE:COLUMN: MESSAGE-SUBSTRING
//   # expect-hint: HINT-SUBSTRING            (optional)
// and loading it must fail with exactly those diagnostics (file:line:column, message) and hints.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "policy/policy_loader.h"

namespace lsb {
namespace {

namespace fs = std::filesystem;

struct BadCase {
  std::string path;      // relative to the source dir, as the error prints it
  std::vector<std::string> expect;       // "LINE:COL: message"
  std::vector<std::string> expect_hint;
};

std::vector<BadCase> LoadCases() {
  std::vector<BadCase> cases;
  fs::path dir = fs::path(LSB_SOURCE_DIR) / "tests/policies/bad";
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    BadCase c;
    c.path = "tests/policies/bad/" + entry.path().filename().string();
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line) && line.rfind("# expect", 0) == 0) {
      if (line.rfind("# expect: ", 0) == 0) c.expect.push_back(line.substr(10));
      if (line.rfind("# expect-hint: ", 0) == 0) c.expect_hint.push_back(line.substr(15));
    }
    cases.push_back(c);
  }
  std::sort(cases.begin(), cases.end(), [](const BadCase& a, const BadCase& b) { return a.path < b.path; });
  return cases;
}

TEST(PolicyBadFiles, AtLeastFifteenDistinctCases) { EXPECT_GE(LoadCases().size(), 15u); }

TEST(PolicyBadFiles, EachFailsWithItsExpectedDiagnostics) {
  for (const BadCase& c : LoadCases()) {
    SCOPED_TRACE(c.path);
    ASSERT_FALSE(c.expect.empty()) << c.path << " has no '# expect: LINE:COL: message' first line";
    std::ifstream in(fs::path(LSB_SOURCE_DIR) / c.path);
    std::stringstream text;
    text << in.rdbuf();
    PolicyParse parsed = ParsePolicyDetailed(text.str(), c.path);
    EXPECT_FALSE(parsed.policy.has_value());
    ASSERT_EQ(parsed.diagnostics.size(), c.expect.size()) << FormatDiagnostics(parsed.diagnostics);
    for (size_t i = 0; i < c.expect.size(); ++i) {
      const PolicyDiagnostic& d = parsed.diagnostics[i];
      std::string got = std::to_string(d.pos.line) + ":" + std::to_string(d.pos.column) + ": " + d.message;
      EXPECT_EQ(got.rfind(c.expect[i], 0), 0u) << "expected: " << c.expect[i] << "\n     got: " << got;
      EXPECT_EQ(d.pos.file, c.path);
      EXPECT_FALSE(d.hint.empty());
    }
    for (const auto& hint : c.expect_hint) {
      bool found = std::any_of(parsed.diagnostics.begin(), parsed.diagnostics.end(),
                               [&](const PolicyDiagnostic& d) { return d.hint.find(hint) != std::string::npos; });
      EXPECT_TRUE(found) << "no hint contains: " << hint << "\n" << FormatDiagnostics(parsed.diagnostics);
    }
    // The Error of the plain API carries the same text: "FILE:LINE:COL: message" and "  hint:".
    auto plain = ParsePolicyText(text.str(), c.path);
    ASSERT_FALSE(plain.ok());
    EXPECT_NE(plain.error().message.find(c.path + ":" + c.expect[0]), std::string::npos) << plain.error().message;
    EXPECT_NE(plain.error().message.find("\n  hint: "), std::string::npos);
  }
}

}  // namespace
}  // namespace lsb
