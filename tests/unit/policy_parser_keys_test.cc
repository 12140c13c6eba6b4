// The parser's known keys come from the controls table (policy/controls.h): every control's key is
// read in its section (the policy records where it was written), and a key no section knows is
// refused naming the section.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "policy/controls.h"
#include "policy/policy_loader.h"
#include "protocol/wire_values.h"

namespace lsb {
namespace {

const std::string kBase = "version: \"1.0\"\nname: t\n";

// A policy that writes `control` with a value the parser accepts ("" for the built-in one). No
// `default`: a new row does not compile until it has its sample here (-Werror=switch).
std::string Sample(Control control) {
  switch (control) {
    case Control::kImage: return "container:\n  image: host\n";
    case Control::kPull: return "container:\n  pull: never\n";
    case Control::kBuild: return "container:\n  build:\n    run: [\"true\"]\n";
    case Control::kReadOnly: return "container:\n  read_only: true\n";
    case Control::kTmpfs: return "container:\n  tmpfs:\n    /tmp: \"size=16M\"\n";
    case Control::kMounts: return "container:\n  mounts:\n    - {source: /srv, target: /workspace}\n";
    case Control::kUserNamespace: return "container:\n  user_namespace: true\n";
    case Control::kUser: return "container:\n  user: \"1000:1000\"\n";
    case Control::kPrivileges: return "";
    case Control::kSeccomp: return "container:\n  seccomp: default\n";
    case Control::kNetworkEnabled: return "network:\n  enabled: false\n";
    case Control::kNetworkAllow: return "network:\n  enabled: true\n  allow: [pypi.org]\n";
    case Control::kNetworkDeny: return "network:\n  enabled: true\n  allow: [\"*\"]\n  deny: [evil.example]\n";
    case Control::kNetworkSecrets:
      return "network:\n  enabled: true\n  allow: [api.example.com]\n  secrets:\n"
             "    - {host: api.example.com, header: Authorization, value: \"Bearer ${TOKEN}\"}\n";
    case Control::kCommandsAllow: return "commands:\n  allow: [/usr/bin/python3]\n";
    case Control::kCommandsDeny: return "commands:\n  deny: [/usr/bin/git]\n";
    case Control::kLanguages: return "languages:\n  default: python\n";
    case Control::kCpu: return "resources:\n  cpu: 0.5\n";
    case Control::kMemory: return "resources:\n  memory: 256M\n";
    case Control::kPids: return "resources:\n  pids: 64\n";
    case Control::kTimeout: return "resources:\n  timeout: 10s\n";
    case Control::kTimeoutGrace: return "resources:\n  timeout_grace: 1s\n";
    case Control::kOutput: return "resources:\n  output: 1M\n";
    case Control::kOpenFiles: return "resources:\n  open_files: 64\n";
    case Control::kFileSize: return "resources:\n  file_size: 1M\n";
    case Control::kEnv: return "container:\n  env:\n    LANG: C.UTF-8\n";
    case Control::kWorkdir: return "container:\n  workdir: /tmp\n";
    case Control::kTrace: return "monitoring:\n  trace: true\n";
    case Control::kAlerts:
      return std::string("monitoring:\n  alerts:\n    ") + protocol::AlertRules()[0].name + ": warning\n";
    case Control::kSessionSetup: return "session:\n  setup: \"x = 1\"\n";
    case Control::kBackend: return "backend: native\n";
    case Control::kRuntime: return "container:\n  runtime: runc\n";
    case Control::kGvisorAcceptWeaker: return "container:\n  gvisor_accept_weaker: false\n";
  }
  return "";
}

TEST(PolicyParserKeys, EveryControlKeyIsReadInItsSection) {
  for (const ControlInfo& c : AllControls()) {
    if (c.section == ControlSection::kBuiltIn) continue;
    const std::string text = kBase + Sample(c.id);
    auto parsed = ParsePolicyText(text, "t.yaml");
    ASSERT_TRUE(parsed.ok()) << c.key << ":\n" << text << "\n" << parsed.error().message;
    EXPECT_TRUE(WrittenInPolicy(*parsed, c.id)) << c.key << " was accepted but not recorded";
    // The key sits where the table says: under its section, or at the top level.
    std::string section(SectionName(c.section));
    std::string key(c.yaml_key());
    if (section.empty()) {
      EXPECT_NE(text.find("\n" + key + ":"), std::string::npos) << c.key;
    } else {
      EXPECT_NE(text.find("\n" + section + ":\n"), std::string::npos) << c.key;
      EXPECT_NE(text.find("\n  " + key + ":"), std::string::npos) << c.key;
    }
  }
}

TEST(PolicyParserKeys, AnUnknownKeyIsRefusedNamingItsSection) {
  const std::vector<std::string> sections = {"container", "network", "commands", "resources", "monitoring", "session"};
  for (const std::string& section : sections) {
    auto parsed = ParsePolicyText(kBase + section + ":\n  no_such_key: 1\n", "t.yaml");
    ASSERT_FALSE(parsed.ok()) << section;
    EXPECT_NE(parsed.error().message.find("unknown key 'no_such_key' in '" + section + "'"), std::string::npos)
        << parsed.error().message;
  }
  auto top = ParsePolicyText(kBase + "no_such_key: 1\n", "t.yaml");
  ASSERT_FALSE(top.ok());
  EXPECT_NE(top.error().message.find("unknown key 'no_such_key' at the top level"), std::string::npos)
      << top.error().message;
}

TEST(PolicyParserKeys, TheKnownKeysAreTheTablesAndANearMissIsNamed) {
  // The hint lists every control of the section, and a typo of one gets its did-you-mean.
  for (const ControlInfo& c : AllControls()) {
    if (c.section == ControlSection::kBuiltIn || c.section == ControlSection::kTop) continue;
    std::string key(c.yaml_key());
    std::string typo = key.substr(0, key.size() - 1) + (key.back() == 'z' ? "y" : "z");
    auto parsed = ParsePolicyText(kBase + std::string(SectionName(c.section)) + ":\n  " + typo + ": 1\n", "t.yaml");
    ASSERT_FALSE(parsed.ok()) << c.key;
    EXPECT_NE(parsed.error().message.find("did you mean '" + key + "'?"), std::string::npos) << parsed.error().message;
    for (const std::string& known : KeysOfSection(c.section))
      EXPECT_NE(parsed.error().message.find(known), std::string::npos) << c.key << " hint lacks " << known;
  }
}

}  // namespace
}  // namespace lsb
