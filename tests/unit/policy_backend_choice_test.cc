// The policy's backend and container.runtime: each value's one spelling (policy/backend_choice.h)
// reads back to the value, in the YAML and on the wire.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "policy/backend_choice.h"
#include "policy_parse_helpers.h"
#include "runtime/policy_explain.h"

namespace lsb {
namespace {

TEST(PolicyBackendChoice, EverySpellingReadsBackToItsValue) {
  for (const std::string& text : BackendKindSpellings()) {
    auto kind = ParseBackendKind(text);
    ASSERT_TRUE(kind) << text;
    EXPECT_EQ(Spelling(*kind), text);
  }
  for (const std::string& text : ContainerRuntimeSpellings()) {
    auto runtime = ParseContainerRuntime(text);
    ASSERT_TRUE(runtime) << text;
    EXPECT_EQ(Spelling(*runtime), text);
  }
  // The spellings are today's wire values, in this order (the parser's hint lists them so).
  EXPECT_EQ(BackendKindSpellings(), (std::vector<std::string>{"auto", "native", "docker"}));
  EXPECT_EQ(ContainerRuntimeSpellings(), (std::vector<std::string>{"runc", "runsc"}));
  EXPECT_FALSE(ParseBackendKind("Docker"));
  EXPECT_FALSE(ParseBackendKind(""));
  EXPECT_FALSE(ParseContainerRuntime("gvisor"));
}

TEST(PolicyBackendChoice, TheParserReadsAndTheExplanationWritesTheSpelling) {
  const std::string base = "version: \"1.0\"\nname: t\ncontainer:\n  image: python:3.12-slim\n";
  Policy docker = MustParse(base + "backend: docker\n");
  EXPECT_EQ(docker.backend, BackendKind::kDocker);
  EXPECT_EQ(docker.runtime, ContainerRuntime::kRunc);
  nlohmann::json j = ExplanationJson(docker);
  EXPECT_EQ(j["backend"], "docker");
  EXPECT_EQ(j["runtime"], "runc");
  EXPECT_NE(FormatExplanation(docker).find("backend: docker, runtime: runc."), std::string::npos);

  Policy gvisor = MustParse(base + "  runtime: runsc\n  gvisor_accept_weaker: true\nbackend: docker\n");
  EXPECT_EQ(gvisor.runtime, ContainerRuntime::kRunsc);
}

TEST(PolicyBackendChoice, ANearMissGetsItsDidYouMean) {
  std::string e = ParseError("version: \"1.0\"\nname: t\nbackend: dockr\n");
  EXPECT_NE(e.find("backend: unknown value 'dockr'"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'docker'? write one of: auto, native, docker"), std::string::npos) << e;
  e = ParseError("version: \"1.0\"\nname: t\ncontainer:\n  runtime: runsx\n");
  EXPECT_NE(e.find("did you mean 'runsc'? write one of: runc, runsc (runsc is gVisor, Docker backend only)"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace lsb
