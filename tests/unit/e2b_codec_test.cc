// The E2B front door's pure parts: the Connect envelopes, the simple-command splitter, the
// multipart parser and the runCode report (src/server/e2b/).
#include <gtest/gtest.h>

#include "server/e2b/command_cell.h"
#include "server/e2b/connect_codec.h"
#include "server/e2b/multipart.h"
#include "server/json_codec.h"
#include "server/e2b/shell_words.h"

namespace lsb::server::e2b {
namespace {

HttpRequest Streaming(std::string body) {
  HttpRequest r;
  r.headers["content-type"] = "application/connect+json";
  r.body = std::move(body);
  return r;
}

std::string Frame(unsigned char flag, uint32_t n, const std::string& payload) {
  std::string s(1, static_cast<char>(flag));
  for (int shift = 24; shift >= 0; shift -= 8) s.push_back(static_cast<char>((n >> shift) & 0xff));
  return s + payload;
}

TEST(E2bConnect, EnvelopeRoundTrip) {
  std::string env = Envelope({{"a", 1}});
  auto j = ParseRequest(Streaming(env), true);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["a"], 1);
  EXPECT_EQ(static_cast<unsigned char>(EndStream(nullptr)[0]), 2);
}

TEST(E2bConnect, RefusesLyingOrHostileEnvelopes) {
  EXPECT_FALSE(ParseRequest(Streaming(Frame(0, 0xffffffff, "{}")), true).ok());
  EXPECT_EQ(ParseRequest(Streaming(Frame(0, 0xffffffff, "{}")), true).error().code, ApiCode::kPayloadTooLarge);
  EXPECT_FALSE(ParseRequest(Streaming(Frame(0, 5, "{}")), true).ok());
  EXPECT_FALSE(ParseRequest(Streaming(Frame(1, 2, "{}")), true).ok());
  EXPECT_FALSE(ParseRequest(Streaming(Frame(0, 2, "{}") + Frame(0, 2, "{}")), true).ok());
  EXPECT_FALSE(ParseRequest(Streaming("\0\0"), true).ok());
  EXPECT_FALSE(ParseRequest(Streaming(Frame(0, 2, "[]")), true).ok());
  HttpRequest unary;
  unary.headers["content-type"] = "text/plain";
  unary.body = "{}";
  EXPECT_EQ(ParseRequest(unary, false).error().code, ApiCode::kUnsupportedMediaType);
}

TEST(E2bShellWords, SplitsSimpleCommandsLikeSh) {
  auto w = SplitSimpleCommand(R"(python3 -c 'print("a b")' "x \"y\"" z\ w)");
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_EQ(*w, (std::vector<std::string>{"python3", "-c", "print(\"a b\")", "x \"y\"", "z w"}));
  EXPECT_EQ(*SplitSimpleCommand("a ''"), (std::vector<std::string>{"a", ""}));
}

TEST(E2bShellWords, RefusesWhatOnlyAShellMeans) {
  for (const char* line : {"a | b", "a > f", "a; b", "a && b", "a $HOME", "a \"$HOME\"", "a `id`", "a *.py", "~/x",
                           "A=1 python3", "a # c", "a\nb", "'open", "\"open", "", "a \\"}) {
    EXPECT_FALSE(SplitSimpleCommand(line).ok()) << line;
  }
}

TEST(E2bMultipart, ParsesPartsAndRefusesBrokenOnes) {
  std::string ct = "multipart/form-data; boundary=\"B1\"";
  std::string body = "--B1\r\nContent-Disposition: form-data; name=\"file\"; filename=\"/tmp/a\"\r\n"
                     "Content-Type: application/octet-stream\r\n\r\nAB\r\nC\r\n--B1\r\n"
                     "Content-Disposition: form-data; name=\"file\"; filename=\"/tmp/b\"\r\n\r\n\r\n--B1--\r\n";
  auto p = ParseMultipart(ct, body);
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p->size(), 2u);
  EXPECT_EQ((*p)[0].filename, "/tmp/a");
  EXPECT_EQ((*p)[0].data, "AB\r\nC");
  EXPECT_EQ((*p)[1].data, "");
  EXPECT_FALSE(ParseMultipart("multipart/form-data", body).ok());
  EXPECT_FALSE(ParseMultipart(ct, body.substr(0, body.size() - 10)).ok());
  EXPECT_FALSE(ParseMultipart(ct, "--B1\r\nX: y\r\n\r\nd\r\n--B1--").ok());
  EXPECT_FALSE(ParseMultipart("text/plain; boundary=B1", body).ok());
}

TEST(E2bCommandCell, CarriesTheCheckedRunAsDataNeverAsCode) {
  CommandCell c;
  c.argv = {"python3", "-c", "print('a'); __import__('os')"};
  c.env = {{"A", "x'); import os #"}};
  c.cwd = "/tmp";
  c.timeout_ms = 1000;
  c.output_cap = 100;
  std::string src = CommandCellSource(c);
  // The argv and env travel base64-encoded inside one string literal: nothing of them is Python.
  EXPECT_EQ(src.find("print('a')"), std::string::npos);
  EXPECT_EQ(src.find("import os #"), std::string::npos);
  size_t at = src.find("_lsb_cmd('") + 10;
  bool ok = false;
  std::string decoded = Base64Decode(src.substr(at, src.find('\'', at) - at), &ok);
  ASSERT_TRUE(ok);
  auto j = nlohmann::json::parse(decoded);
  EXPECT_EQ(j["argv"][2], "print('a'); __import__('os')");
  EXPECT_EQ(j["env"]["A"], "x'); import os #");
  EXPECT_EQ(j["timeout_ms"], 1000);
}

}  // namespace
}  // namespace lsb::server::e2b
