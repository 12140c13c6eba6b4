// The HTTP/1.1 codec the Docker client speaks: request encoding and incremental response parsing.
#include <gtest/gtest.h>

#include "runtime/docker/http_codec.h"

namespace lsb::docker {
namespace {

// Feeds `wire` one byte at a time: the parser must not depend on how reads split the stream.
HttpResponse ParseBytewise(const std::string& wire, bool eof_at_end = false) {
  ResponseParser p;
  for (char c : wire) {
    auto st = p.Feed(std::string_view(&c, 1));
    EXPECT_TRUE(st.ok()) << st.error().message;
  }
  if (eof_at_end) {
    EXPECT_TRUE(p.FeedEof().ok());
  }
  EXPECT_TRUE(p.done());
  return p.TakeResponse();
}

TEST(DockerHttpCodec, EncodesRequestWithHostAndLength) {
  HttpRequest r;
  r.method = "POST";
  r.target = "/v1.41/containers/create";
  r.body = "{}";
  std::string wire = EncodeRequest(r);
  EXPECT_EQ(wire, "POST /v1.41/containers/create HTTP/1.1\r\nHost: docker\r\nContent-Length: 2\r\n\r\n{}");
}

TEST(DockerHttpCodec, PostWithoutBodyStillSendsZeroLength) {
  HttpRequest r;
  r.method = "POST";
  r.target = "/v1.41/containers/x/start";
  EXPECT_NE(EncodeRequest(r).find("Content-Length: 0\r\n"), std::string::npos);
}

TEST(DockerHttpCodec, ContentLengthBody) {
  auto resp = ParseBytewise("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}");
  EXPECT_EQ(resp.status, 200);
  EXPECT_EQ(resp.reason, "OK");
  EXPECT_EQ(resp.Header("content-type"), "application/json");
  EXPECT_EQ(resp.body, "{\"a\":1}");
}

TEST(DockerHttpCodec, ChunkedBodyWithExtensionsAndTrailers) {
  auto resp = ParseBytewise(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX-Trailer: y\r\n\r\n");
  EXPECT_EQ(resp.body, "Wikipedia in\r\n\r\nchunks.");
}

TEST(DockerHttpCodec, NoContentHasNoBody) {
  ResponseParser p;
  ASSERT_TRUE(p.Feed("HTTP/1.1 204 No Content\r\nServer: Docker\r\n\r\n").ok());
  EXPECT_TRUE(p.done());
  EXPECT_EQ(p.response().status, 204);
}

TEST(DockerHttpCodec, ReadUntilCloseNeedsEof) {
  ResponseParser p;
  ASSERT_TRUE(p.Feed("HTTP/1.1 200 OK\r\n\r\nabc").ok());
  EXPECT_FALSE(p.done());
  ASSERT_TRUE(p.FeedEof().ok());
  EXPECT_TRUE(p.done());
  EXPECT_EQ(p.response().body, "abc");
}

TEST(DockerHttpCodec, TruncatedBodyIsAnError) {
  ResponseParser p;
  ASSERT_TRUE(p.Feed("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc").ok());
  EXPECT_FALSE(p.FeedEof().ok());
}

TEST(DockerHttpCodec, HijackKeepsBytesAfterHeaders) {
  ResponseParser p;
  p.StopAfterHeaders();
  std::string raw("\x01\x00\x00\x00\x00\x00\x00\x02hi", 10);
  ASSERT_TRUE(p.Feed("HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.multiplexed-stream\r\n"
                     "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n" + raw).ok());
  EXPECT_TRUE(p.headers_done());
  EXPECT_EQ(p.response().status, 101);
  EXPECT_EQ(p.TakeRest(), raw);
}

TEST(DockerHttpCodec, MalformedInputIsRefused) {
  EXPECT_FALSE(ResponseParser().Feed("SSH-2.0-OpenSSH\r\n\r\n").ok());
  EXPECT_FALSE(ResponseParser().Feed("HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n").ok());
  EXPECT_FALSE(ResponseParser().Feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n").ok());
  EXPECT_FALSE(ResponseParser().Feed("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n").ok());
}

TEST(DockerHttpCodec, OversizedBodyIsRefused) {
  ResponseParser p;
  EXPECT_FALSE(p.Feed("HTTP/1.1 200 OK\r\nContent-Length: 999999999999\r\n\r\n").ok());
}

TEST(DockerHttpCodec, UrlEncode) {
  EXPECT_EQ(UrlEncode("{\"label\":[\"a=b\"]}"), "%7B%22label%22%3A%5B%22a%3Db%22%5D%7D");
  EXPECT_EQ(UrlEncode("python-3.11_x~"), "python-3.11_x~");
}

}  // namespace
}  // namespace lsb::docker
