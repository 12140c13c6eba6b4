#include "image/registry_auth.h"

#include <gtest/gtest.h>

namespace lsb::image::registry {
namespace {

TEST(RegistryChallenge, DockerHubsBearerChallengeGivesRealmServiceAndScope) {
  auto c = ParseChallenges({"Bearer realm=\"https://auth.docker.io/token\",service=\"registry.docker.io\","
                            "scope=\"repository:library/python:pull\""});
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].scheme, "bearer");
  EXPECT_EQ(c[0].Param("realm"), "https://auth.docker.io/token");
  EXPECT_EQ(c[0].Param("service"), "registry.docker.io");
  EXPECT_EQ(c[0].Param("scope"), "repository:library/python:pull");
}

TEST(RegistryChallenge, SeveralChallengesInOneHeaderAndUnquotedValuesAndEscapes) {
  auto c = ParseChallenges({"Basic realm=\"Registry \\\"Realm\\\"\", Bearer realm=https://h/t, error=invalid_token"});
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].scheme, "basic");
  EXPECT_EQ(c[0].Param("realm"), "Registry \"Realm\"");
  EXPECT_EQ(c[1].scheme, "bearer");
  EXPECT_EQ(c[1].Param("realm"), "https://h/t");
  EXPECT_EQ(c[1].Param("error"), "invalid_token");
}

TEST(RegistryChallenge, AnUnterminatedQuoteKeepsWhatCameBeforeAndDoesNotOverrun) {
  auto c = ParseChallenges({"Bearer realm=\"https://a/t\",service=\"unterminated"});
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].Param("realm"), "https://a/t");
  EXPECT_TRUE(ParseChallenges({""}).empty());
  EXPECT_TRUE(ParseChallenges({"===,,,"}).empty());
}

TEST(RegistryToken, TheTokenRequestEscapesServiceAndScope) {
  auto realm = ParseUrl("https://auth.example/token?x=1");
  ASSERT_TRUE(realm.ok());
  EXPECT_EQ(TokenRequestTarget(*realm, "reg svc", "repository:a/b:pull"),
            "/token?x=1&service=reg%20svc&scope=repository%3Aa%2Fb%3Apull");
}

TEST(RegistryToken, TokenOrAccessTokenAndNothingElseIsAccepted) {
  EXPECT_EQ(*ParseTokenResponse(R"({"token":"abc","expires_in":300})"), "abc");
  EXPECT_EQ(*ParseTokenResponse(R"({"access_token":"xyz"})"), "xyz");
  EXPECT_FALSE(ParseTokenResponse(R"({"nope":1})").ok());
  EXPECT_FALSE(ParseTokenResponse("not json").ok());
  EXPECT_FALSE(ParseTokenResponse("{\"token\":\"a\\r\\nX-Injected: 1\"}").ok());
}

TEST(RegistryUrl, HostPortAsCertsDirNamesItAndLoopbackHosts) {
  auto u = ParseUrl("https://127.0.0.1:5000/v2/");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->HostPort(), "127.0.0.1:5000");
  EXPECT_EQ(ParseUrl("https://ghcr.io/x")->HostPort(), "ghcr.io");
  EXPECT_EQ(ParseUrl("http://[::1]:5000/x")->host, "::1");
  EXPECT_FALSE(ParseUrl("ftp://x/").ok());
  EXPECT_FALSE(ParseUrl("https://user:pw@x/").ok());
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("127.9.9.9"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_FALSE(IsLoopbackHost("128.0.0.1"));
  EXPECT_FALSE(IsLoopbackHost("localhost.evil.com"));
}

TEST(RegistryUrl, ARedirectResolvesAgainstTheRequestAndKeepsTheQuery) {
  auto base = ParseUrl("https://reg.example/v2/x/blobs/sha256:aa");
  auto abs = ResolveUrl(*base, "https://s3.example/bucket/obj?sig=1");
  ASSERT_TRUE(abs.ok());
  EXPECT_EQ(abs->host, "s3.example");
  EXPECT_EQ(abs->target, "/bucket/obj?sig=1");
  auto rel = ResolveUrl(*base, "/other?x");
  EXPECT_EQ(rel->Origin(), "https://reg.example");
  EXPECT_EQ(rel->target, "/other?x");
}

}  // namespace
}  // namespace lsb::image::registry
