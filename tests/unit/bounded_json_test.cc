// The one parser of outside JSON (base/bounded_json.h): the pre-scan's depth and element counts
// are exact on valid JSON (strings and escapes included), every limit is refused with its kind
// and its value named, deep inputs of 10^5 and 10^6 levels are refused without recursion, and
// what passes parses as nlohmann would. Issue 15, class 1.
#include "base/bounded_json.h"

#include <gtest/gtest.h>

#include <vector>

namespace lsb {
namespace {

std::string Nested(size_t n, char open = '[', char close = ']') { return std::string(n, open) + std::string(n, close); }

std::string NestedObjects(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += "{\"a\":";
  s += "1";
  s += std::string(n, '}');
  return s;
}

TEST(BoundedJson, ShapeIsExactOnValidJson) {
  EXPECT_EQ(ScanJsonShape("1").depth, 0u);
  EXPECT_EQ(ScanJsonShape("[]").depth, 1u);
  EXPECT_EQ(ScanJsonShape("[]").elements, 0u);
  EXPECT_EQ(ScanJsonShape("[1]").elements, 1u);
  EXPECT_EQ(ScanJsonShape("[1, 2 ,3]").elements, 3u);
  EXPECT_EQ(ScanJsonShape(" { \"a\" : [ {} , [ ] ] } ").depth, 3u);
  EXPECT_EQ(ScanJsonShape(" { \"a\" : [ {} , [ ] ] } ").elements, 3u);  // a, {}, []
  EXPECT_EQ(ScanJsonShape(Nested(64)).depth, 64u);
  EXPECT_EQ(ScanJsonShape(NestedObjects(10)).depth, 10u);
  // Brackets, commas, quotes and backslashes inside strings are not structure.
  EXPECT_EQ(ScanJsonShape(R"(["[[[{{,,,", "\"[[", "\\", "\\\"[", "x"])").depth, 1u);
  EXPECT_EQ(ScanJsonShape(R"(["[[[{{,,,", "\"[[", "\\", "\\\"[", "x"])").elements, 5u);
  EXPECT_EQ(ScanJsonShape(R"({"k\"]}": [[1]]})").depth, 3u);
}

TEST(BoundedJson, ScanStopsEarlyPastTheLimit) {
  JsonShape s = ScanJsonShape(Nested(1000000), 64);
  EXPECT_EQ(s.depth, 65u);
}

TEST(BoundedJson, ParsesWhatIsWithinTheLimits) {
  ParsedJson j = ParseBoundedJson(R"({"a": [1, "x", {"b": null}], "c": 2.5})");
  ASSERT_TRUE(j.ok()) << j.error().message;
  EXPECT_EQ((*j)["a"][1], "x");
  ParsedJson at = ParseBoundedJson(Nested(kJsonMaxDepth));
  ASSERT_TRUE(at.ok()) << at.error().message;
  nlohmann::json copy = *at;  // copy and dump recurse per level: fine at the limit
  EXPECT_EQ(copy.dump(), Nested(kJsonMaxDepth));
}

TEST(BoundedJson, DeepIsRefusedWithTheLimitNamed) {
  for (size_t n : {size_t{65}, size_t{100000}, size_t{1000000}}) {
    for (const std::string& text : {Nested(n), Nested(n, '{', '}'), NestedObjects(n), std::string(n, '[')}) {
      ParsedJson j = ParseBoundedJson(text);
      ASSERT_FALSE(j.ok()) << n;
      EXPECT_EQ(j.error().kind, JsonErrorKind::kTooDeep);
      EXPECT_EQ(j.error().limit, kJsonMaxDepth);
      EXPECT_NE(j.error().message.find("64 levels"), std::string::npos) << j.error().message;
    }
  }
  // Deep inside a valid envelope, as a JSON-RPC message would be.
  ParsedJson rpc = ParseBoundedJson(R"({"jsonrpc":"2.0","id":1,"method":"x","params":)" + Nested(100000) + "}");
  ASSERT_FALSE(rpc.ok());
  EXPECT_EQ(rpc.error().kind, JsonErrorKind::kTooDeep);
  // A custom limit is the one named.
  ParsedJson custom = ParseBoundedJson(Nested(9), {1000, 8, 1000});
  ASSERT_FALSE(custom.ok());
  EXPECT_NE(custom.error().message.find("limit of 8 levels"), std::string::npos);
}

TEST(BoundedJson, LargeAndWideAreRefusedWithTheLimitNamed) {
  std::string big = "\"" + std::string(2000, 'x') + "\"";
  ParsedJson j = ParseBoundedJson(big, {1000, 64, 100});
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.error().kind, JsonErrorKind::kTooLarge);
  EXPECT_EQ(j.error().limit, 1000u);
  EXPECT_NE(j.error().message.find("2002 bytes"), std::string::npos) << j.error().message;
  EXPECT_NE(j.error().message.find("limit of 1000 bytes"), std::string::npos) << j.error().message;

  std::string wide = "[0";
  for (int i = 0; i < 200; ++i) wide += ",0";
  wide += "]";
  ParsedJson w = ParseBoundedJson(wide, {1 << 20, 64, 100});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().kind, JsonErrorKind::kTooManyElements);
  EXPECT_EQ(w.error().limit, 100u);
  EXPECT_NE(w.error().message.find("limit of 100"), std::string::npos);
  EXPECT_TRUE(ParseBoundedJson(wide, {1 << 20, 64, 201}).ok());

  // Flat and huge: 2^20 elements (the default cap) parse; one more is refused.
  std::string flat = "[0";
  for (size_t i = 1; i < kJsonMaxElements; ++i) flat += ",0";
  flat += "]";
  ParsedJson f = ParseBoundedJson(flat);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->size(), kJsonMaxElements);
  flat.insert(flat.size() - 1, ",0");
  ParsedJson over = ParseBoundedJson(flat);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().kind, JsonErrorKind::kTooManyElements);
}

TEST(BoundedJson, SyntaxErrorsSayWhereButDoNotEchoTheInput) {
  std::string secret(5000, 'S');
  const std::vector<std::string> bad = {"{oops", "\"" + secret, "[1,]", "", "1 2", "[1e99999]", "\"\\x\""};
  for (const std::string& text : bad) {
    ParsedJson j = ParseBoundedJson(text);
    ASSERT_FALSE(j.ok()) << text.substr(0, 20);
    EXPECT_EQ(j.error().kind, JsonErrorKind::kSyntax);
    EXPECT_EQ(j.error().limit, 0u);
    EXPECT_LT(j.error().message.size(), 100u) << j.error().message;
    EXPECT_EQ(j.error().message.find("SSSS"), std::string::npos);
  }
  EXPECT_NE(ParseBoundedJson("[1,]").error().message.find("at byte"), std::string::npos);
}

TEST(BoundedJson, StringMembersNeverThrow) {
  nlohmann::json j = {{"s", "v"}, {"n", 5}, {"a", {1}}, {"o", {{"x", 1}}}};
  EXPECT_EQ(JsonStringOr(j, "s", "f"), "v");
  EXPECT_EQ(JsonStringOr(j, "n", "f"), "f");
  EXPECT_EQ(JsonStringOr(j, "a", "f"), "f");
  EXPECT_EQ(JsonStringOr(j, "o", "f"), "f");
  EXPECT_EQ(JsonStringOr(j, "missing", "f"), "f");
  EXPECT_EQ(JsonStringOr(nlohmann::json::array({1}), "s", "f"), "f");
}

}  // namespace
}  // namespace lsb
