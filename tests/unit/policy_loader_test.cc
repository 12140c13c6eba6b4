#include "policy/policy_loader.h"
#include "policy_parse_helpers.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "runtime/policy_explain.h"
#include "policy/languages.h"

namespace lsb {
namespace {

const std::string kSource = LSB_SOURCE_DIR;

// Issue 37: the seed allows pip, which cannot install in its box; the file says why and what to do.
TEST(PolicyLoader, SeedSaysWhyPipCannotInstall) {
  std::ifstream seed(kSource + "/policies/code-sandbox.yaml");
  std::string text((std::istreambuf_iterator<char>(seed)), std::istreambuf_iterator<char>());
  size_t note = text.find("# pip: ");
  ASSERT_NE(note, std::string::npos) << "policies/code-sandbox.yaml lost its note on pip";
  std::string rest = text.substr(note);
  for (const char* words : {"network is off", "read-only", "container.build", "docs/policy.md"})
    EXPECT_NE(rest.find(words), std::string::npos) << words;
}

TEST(PolicyLoader, SeedLoadsVerbatimWithExactValues) {
  std::ifstream seed(kSource + "/policies/code-sandbox.yaml");
  ASSERT_TRUE(seed);
  auto loaded = LoadPolicyFile(kSource + "/policies/code-sandbox.yaml");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const Policy& p = *loaded;
  EXPECT_EQ(p.version, "1.0");
  EXPECT_EQ(p.name, "code-sandbox");
  EXPECT_EQ(p.image, "python:3.12-slim");
  EXPECT_TRUE(p.read_only);
  ASSERT_EQ(p.tmpfs.size(), 1u);
  EXPECT_EQ(p.tmpfs[0].path, "/tmp");
  EXPECT_EQ(p.tmpfs[0].size_bytes, 100ull << 20);
  EXPECT_TRUE(p.tmpfs[0].noexec);
  EXPECT_TRUE(p.tmpfs[0].nosuid);
  EXPECT_TRUE(p.tmpfs[0].nodev);  // always, even when not written
  EXPECT_EQ(p.tmpfs[0].options, "size=100M,noexec,nosuid");
  EXPECT_TRUE(p.user_namespace);
  EXPECT_EQ(p.seccomp, "default");
  EXPECT_FALSE(p.network_enabled);
  EXPECT_EQ(p.allow, (std::vector<std::string>{"/usr/bin/python3", "/usr/bin/pip"}));
  EXPECT_EQ(p.deny, (std::vector<std::string>{"/bin/bash", "/bin/sh", "/usr/bin/wget"}));
  EXPECT_DOUBLE_EQ(p.cpu, 0.5);
  EXPECT_EQ(p.memory_bytes, 256ull << 20);
  EXPECT_EQ(p.timeout_ms, 30000u);
  EXPECT_EQ(p.positions.at("resources.memory").ToString(), kSource + "/policies/code-sandbox.yaml:23:11");
}

TEST(PolicyLoader, SeedIsByteIdenticalToTheShippedCopy) {
  std::ifstream a(kSource + "/policies/code-sandbox.yaml", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(a)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.rfind("# sandbox-policy.yaml\nversion: \"1.0\"\nname: code-sandbox\n", 0), 0u);
}

TEST(PolicyLoader, DefaultsWhenLeftOut) {
  Policy p = MustParse("version: \"1.0\"\nname: minimal\n");
  EXPECT_EQ(p.backend, BackendKind::kAuto);
  EXPECT_EQ(p.runtime, ContainerRuntime::kRunc);
  EXPECT_FALSE(p.gvisor_accept_weaker);
  EXPECT_EQ(p.image, "host");
  EXPECT_TRUE(p.read_only);
  EXPECT_TRUE(p.tmpfs.empty());
  EXPECT_TRUE(p.user_namespace);
  EXPECT_EQ(p.seccomp, "default");
  EXPECT_EQ(p.uid, 1000u);
  EXPECT_EQ(p.gid, 1000u);
  EXPECT_EQ(p.workdir, "/tmp");
  EXPECT_TRUE(p.env.empty());
  EXPECT_FALSE(p.network_enabled);
  EXPECT_EQ(p.allow, (std::vector<std::string>{"/usr/bin/python3"}));  // the default language's interpreter
  EXPECT_TRUE(p.deny.empty());
  EXPECT_EQ(p.default_language, "python");
  EXPECT_EQ(p.languages.size(), 4u);
  EXPECT_DOUBLE_EQ(p.cpu, 1.0);
  EXPECT_EQ(p.memory_bytes, 512ull << 20);
  EXPECT_EQ(p.timeout_ms, 30000u);
  EXPECT_EQ(p.pids, 128u);
  EXPECT_EQ(p.output_bytes, 1ull << 20);
  EXPECT_EQ(p.open_files, 256u);
  EXPECT_EQ(p.file_size_bytes, 64ull << 20);
  EXPECT_FALSE(p.trace);
  EXPECT_EQ(p.positions.count("resources.memory"), 0u);
}

TEST(PolicyLoader, EveryExtensionField) {
  Policy p = MustParse(R"(version: "1.0"
name: full
description: everything
backend: docker
container:
  image: python:3.12-slim
  runtime: runsc
  gvisor_accept_weaker: true
  tmpfs:
    /tmp: "size=32M, mode=0700"
    /home/sandbox: ""
  user: "1234:5678"
  workdir: /home/sandbox
  env: {LANG: C.UTF-8, EMPTY: }
commands:
  allow: ["/usr/bin/python3", "/usr/bin/ruby"]
languages:
  default: ruby
  ruby: {command: ["/usr/bin/ruby", "{file}"], file: main.rb}
  python: {command: ["/usr/bin/python3", "-I", "{file}"]}
resources:
  cpu: "500m"
  memory: 268435456
  timeout: "1m30s"
  pids: 32
  output: "64k"
  open_files: 100
  file_size: "1M"
monitoring:
  trace: true
)");
  EXPECT_EQ(p.backend, BackendKind::kDocker);
  EXPECT_EQ(p.runtime, ContainerRuntime::kRunsc);
  EXPECT_TRUE(p.gvisor_accept_weaker);
  ASSERT_EQ(p.tmpfs.size(), 2u);
  EXPECT_EQ(p.tmpfs[0].mode, 0700u);
  EXPECT_EQ(p.tmpfs[0].size_bytes, 32ull << 20);
  EXPECT_EQ(p.tmpfs[1].size_bytes, 64ull << 20);  // default size
  EXPECT_EQ(p.uid, 1234u);
  EXPECT_EQ(p.gid, 5678u);
  EXPECT_EQ(p.env.at("LANG"), "C.UTF-8");
  EXPECT_EQ(p.env.at("EMPTY"), "");
  EXPECT_EQ(p.default_language, "ruby");
  EXPECT_EQ(p.FindLanguage("ruby")->file_name, "main.rb");
  EXPECT_EQ(p.FindLanguage("python")->command, (std::vector<std::string>{"/usr/bin/python3", "-I", "{file}"}));
  EXPECT_EQ(p.FindLanguage("python")->file_name, "main.py");  // kept from the built-in
  EXPECT_DOUBLE_EQ(p.cpu, 0.5);
  EXPECT_EQ(p.memory_bytes, 268435456u);
  EXPECT_EQ(p.timeout_ms, 90000u);
  EXPECT_EQ(p.pids, 32u);
  EXPECT_EQ(p.output_bytes, 64u << 10);
  EXPECT_EQ(p.open_files, 100u);
  EXPECT_EQ(p.file_size_bytes, 1u << 20);
  EXPECT_TRUE(p.trace);
}

TEST(PolicyLoader, CollectsEveryErrorWithHints) {
  std::string err = ParseError("version: \"1.0\"\nname: x\nresources:\n  memory: lots\n  cpu: half\n  pidz: 3\n");
  EXPECT_NE(err.find("t.yaml:4:11: resources.memory"), std::string::npos) << err;
  EXPECT_NE(err.find("t.yaml:5:8: resources.cpu"), std::string::npos) << err;
  EXPECT_NE(err.find("t.yaml:6:3: unknown key 'pidz'"), std::string::npos) << err;
  EXPECT_NE(err.find("did you mean 'pids'?"), std::string::npos) << err;
  size_t hints = 0;
  for (size_t at = err.find("\n  hint: "); at != std::string::npos; at = err.find("\n  hint: ", at + 1)) ++hints;
  EXPECT_EQ(hints, 3u);
}

TEST(PolicyLoader, EmptyAndNonMappingDocuments) {
  EXPECT_NE(ParseError("").find("t.yaml:1:1: the policy is empty"), std::string::npos);
  EXPECT_NE(ParseError("- a\n- b\n").find("t.yaml:1:1: a policy is a mapping"), std::string::npos);
}

TEST(PolicyLanguages, ResolveChecksAllowAndDeny) {
  Policy seed = *LoadPolicyFile(kSource + "/policies/code-sandbox.yaml");
  auto py = ResolveLanguage(seed, "");
  ASSERT_TRUE(py.ok()) << py.error().message;
  EXPECT_EQ(py->name, "python");
  EXPECT_EQ(py->command, (std::vector<std::string>{"/usr/bin/python3", "-u", "{file}"}));
  EXPECT_EQ(py->file_name, "main.py");

  auto bash = ResolveLanguage(seed, "bash");
  ASSERT_FALSE(bash.ok());
  EXPECT_NE(bash.error().message.find("language 'bash' runs /bin/bash, which commands.deny lists; use a policy that "
                                      "allows it"),
            std::string::npos)
      << bash.error().message;

  auto node = ResolveLanguage(seed, "node");
  ASSERT_FALSE(node.ok());
  EXPECT_NE(node.error().message.find("/usr/bin/node, which commands.allow does not list"), std::string::npos);

  auto ruby = ResolveLanguage(seed, "rubby");
  ASSERT_FALSE(ruby.ok());
  EXPECT_NE(ruby.error().message.find("has no language 'rubby'"), std::string::npos);
}

TEST(PolicyLoader, ByNameThroughTheSearchPath) {
  ::setenv("LLM_SANDBOX_POLICY_DIR", ("/nonexistent:" + kSource + "/policies").c_str(), 1);
  auto p = LoadPolicy("code-sandbox");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->name, "code-sandbox");
  auto missing = LoadPolicy("no-such-policy");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("not found"), std::string::npos);
  EXPECT_NE(missing.error().message.find("/nonexistent"), std::string::npos);
  ::unsetenv("LLM_SANDBOX_POLICY_DIR");
  EXPECT_EQ(PolicySearchPath().front(), "./policies");
}

TEST(PolicyLoader, NameMustMatchTheFile) {
  auto dir = std::filesystem::temp_directory_path() / ("lsb-policy-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "alpha.yaml") << "version: \"1.0\"\nname: beta\n";
  ::setenv("LLM_SANDBOX_POLICY_DIR", dir.c_str(), 1);
  auto p = LoadPolicy("alpha");
  ::unsetenv("LLM_SANDBOX_POLICY_DIR");
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("is named 'beta'"), std::string::npos) << p.error().message;
}

TEST(PolicyLoader, ShippedExamplesAllLoad) {
  for (const auto& entry : std::filesystem::directory_iterator(kSource + "/policies")) {
    if (entry.path().extension() != ".yaml") continue;
    auto p = LoadPolicyFile(entry.path());
    EXPECT_TRUE(p.ok()) << entry.path() << ": " << (p.ok() ? "" : p.error().message);
    if (p.ok()) {
      EXPECT_EQ(p->name + ".yaml", entry.path().filename().string());
    }
  }
}

TEST(PolicyExplain, NamesBothBackendsForEveryControl) {
  Policy seed = *LoadPolicyFile(kSource + "/policies/code-sandbox.yaml");
  auto controls = ExplainPolicy(seed);
  std::vector<std::string> names;
  for (const auto& c : controls) {
    names.push_back(c.row.label);
    EXPECT_FALSE(c.native.how.empty()) << c.row.label;
    EXPECT_FALSE(c.docker.how.empty()) << c.row.label;
  }
  for (const char* want : {"container.image", "container.read_only", "container.tmpfs /tmp", "container.user_namespace",
                           "container.seccomp", "network.enabled", "commands.allow", "commands.deny", "resources.cpu",
                           "resources.memory", "resources.pids", "resources.timeout", "resources.output",
                           "resources.open_files", "resources.file_size", "container.env", "container.workdir",
                           "container.user"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
  std::string text = FormatExplanation(seed);
  EXPECT_NE(text.find("  native: "), std::string::npos);
  EXPECT_NE(text.find("  docker: "), std::string::npos);
  EXPECT_NE(text.find("Landlock"), std::string::npos);
  EXPECT_NE(text.find("NetworkMode \"none\""), std::string::npos);
}

TEST(PolicyExplain, GvisorSaysWhatIsNotEnforced) {
  Policy p = *LoadPolicyFile(kSource + "/policies/python-gvisor.yaml");
  bool found = false;
  for (const auto& c : ExplainPolicy(p)) {
    if (c.row.label == "commands.allow") {
      found = true;
      EXPECT_FALSE(c.docker.enforced());
      EXPECT_EQ(c.docker.verdict, Verdict::kAccepted);
      EXPECT_NE(c.docker.how.find("gvisor_accept_weaker"), std::string::npos);
    }
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace lsb

namespace lsb {
namespace {

// resources.timeout_grace (issue 16): SIGTERM at the timeout, SIGKILL this long after.
TEST(PolicyLoader, TimeoutGraceDefaultsBoundsAndExplain) {
  EXPECT_EQ(MustParse("version: \"1.0\"\nname: g\n").timeout_grace_ms, 2000u);
  Policy p = MustParse("version: \"1.0\"\nname: g\nresources:\n  timeout: 10s\n  timeout_grace: 500ms\n");
  EXPECT_EQ(p.timeout_grace_ms, 500u);
  EXPECT_EQ(MustParse("version: \"1.0\"\nname: g\nresources:\n  timeout_grace: 0\n").timeout_grace_ms, 0u);
  std::string over = ParseError("version: \"1.0\"\nname: g\nresources:\n  timeout: 60s\n  timeout_grace: 31s\n");
  EXPECT_NE(over.find("resources.timeout_grace: must be at most 30s"), std::string::npos) << over;
  std::string longer = ParseError("version: \"1.0\"\nname: g\nresources:\n  timeout: 1s\n  timeout_grace: 2s\n");
  EXPECT_NE(longer.find("resources.timeout_grace: 2s is longer than resources.timeout 1s"), std::string::npos) << longer;
  std::string bad = ParseError("version: \"1.0\"\nname: g\nresources:\n  timeout_grace: soon\n");
  EXPECT_NE(bad.find("resources.timeout_grace"), std::string::npos) << bad;
  std::string text = FormatExplanation(p);
  EXPECT_NE(text.find("resources.timeout_grace"), std::string::npos) << text;
  EXPECT_NE(text.find("SIGTERM"), std::string::npos) << text;
}

}  // namespace
}  // namespace lsb
