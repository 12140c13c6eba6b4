// The table of policy controls (policy/controls.h) and each backend's answer for every control.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "policy/controls.h"
#include "policy/explain.h"
#include "runtime/docker/docker_controls.h"
#include "runtime/native/native_backend.h"
#include "runtime/native/native_controls.h"

namespace lsb {
namespace {

// A policy that sets every control, so each row has something to describe.
Policy Rich() {
  Policy p;
  p.name = "rich";
  p.image = "python:3.12-slim";
  p.tmpfs.push_back(TmpfsMount{"/tmp", 8u << 20});
  p.mounts.push_back(HostMount{"/srv/data", "/data", "ro"});
  p.mounts.push_back(HostMount{"/srv/src", "/src", "overlay"});
  p.build.pip = {"requests"};
  p.network_enabled = true;
  p.network_allow = {"pypi.org"};
  p.network_deny = {"bad.example.com"};
  p.network_secrets.push_back(NetworkSecret{"pypi.org", "Authorization", "Bearer ${T}"});
  p.allow = {"/usr/bin/python3"};
  p.deny = {"/bin/sh"};
  p.memory_bytes = 256u << 20;
  p.cpu = 0.5;
  p.trace = true;
  p.alert_severity[protocol::AlertRule::kDeniedExec] = protocol::Severity::kCritical;
  p.session_setup = "import os";
  return p;
}

// The row a control gets, with the item of a list control.
ControlRow RowOf(const ControlInfo& c, const Policy& p) {
  ControlRow row{c.id, std::string(c.key), "", "", ""};
  if (c.id == Control::kTmpfs) row.item = p.tmpfs.at(0).path;
  if (c.id == Control::kMounts) row.item = p.mounts.at(0).target;
  return row;
}

TEST(PolicyControls, KeysAreUniqueAndSectioned) {
  std::set<std::string_view> keys;
  for (const ControlInfo& c : AllControls()) {
    EXPECT_TRUE(keys.insert(c.key).second) << c.key;
    EXPECT_EQ(&InfoOf(c.id), &c);
    EXPECT_FALSE(c.doc.empty()) << c.key;
    EXPECT_FALSE(c.default_value.empty()) << c.key;
    std::string_view section = SectionName(c.section);
    if (!section.empty()) {
      EXPECT_EQ(c.key, std::string(section) + "." + std::string(c.yaml_key())) << c.key;
    }
  }
  std::vector<std::string> resources = KeysOfSection(ControlSection::kResources);
  EXPECT_EQ(resources.front(), "cpu");
  EXPECT_EQ(resources.size(), 8u);
}

// A backend's answer for every control of the rich policy: a mechanism named, nothing refused.
template <typename Describe>
void ExpectEveryControlEnforced(Describe describe) {
  Policy p = Rich();
  for (const ControlInfo& c : AllControls()) {
    Enforcement e = describe(RowOf(c, p), p);
    EXPECT_FALSE(e.how.empty()) << c.key;
    EXPECT_TRUE(e.enforced()) << c.key << ": " << e.how;
  }
}

TEST(PolicyControls, NativeAnswersEveryControl) { ExpectEveryControlEnforced(native::DescribeControl); }

TEST(PolicyControls, DockerAnswersEveryControl) { ExpectEveryControlEnforced(docker::DescribeControl); }

// Every row of `policy explain` is one of the table's controls, and every control the rich policy
// sets has a row.
TEST(PolicyControls, ExplainRowsFollowTheTable) {
  Policy p = Rich();
  p.positions["session.setup"] = SourcePos{"t.yaml", 3, 1};
  p.positions["monitoring.alerts.denied_exec"] = SourcePos{"t.yaml", 4, 1};
  std::set<Control> seen;
  size_t last = 0;
  for (const ControlRow& row : ControlRows(p)) {
    seen.insert(row.control);
    size_t index = static_cast<size_t>(row.control);
    EXPECT_GE(index, last) << row.label;  // the table's order
    last = index;
  }
  for (const ControlInfo& c : AllControls())
    if (c.id != Control::kGvisorAcceptWeaker) {
      EXPECT_TRUE(seen.count(c.id)) << c.key;
    }
  EXPECT_TRUE(WrittenInPolicy(p, Control::kAlerts));
  EXPECT_FALSE(WrittenInPolicy(p, Control::kMemory));
}

// A control the native backend cannot enforce anywhere refuses the policy, naming the control.
TEST(PolicyControls, NativeRefusesWhatItCannotEnforceByName) {
  native::NativeBackend backend(native::NativeOptions{});
  Policy p = Rich();
  p.runtime = ContainerRuntime::kRunsc;
  p.gvisor_accept_weaker = true;
  auto refused = backend.RefusedControls(p);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].control, "container.runtime");
  auto st = backend.Check(p);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("container.runtime: runsc is a Docker runtime"), std::string::npos)
      << st.error().message;
}

// The Docker backend's answers refuse what no engine can do for it; rows that share a reason are
// named together (Backend::RefusedControls, as DockerBackend::Check reads them).
TEST(PolicyControls, DockerRefusesWhatItCannotEnforceByName) {
  Policy host = Rich();
  host.image = "host";
  Enforcement image = docker::DescribeControl(ControlRow{Control::kImage, "container.image", "", "", ""}, host);
  EXPECT_EQ(image.verdict, Verdict::kRefused);

  Policy gvisor = Rich();
  gvisor.runtime = ContainerRuntime::kRunsc;
  gvisor.gvisor_accept_weaker = true;
  std::vector<std::string> refused;
  for (const ControlRow& row : ControlRows(gvisor))
    if (docker::DescribeControl(row, gvisor).verdict == Verdict::kRefused) refused.push_back(row.label);
  EXPECT_EQ(refused, (std::vector<std::string>{"container.mounts /data", "container.mounts /src", "network.enabled",
                                                "network.allow", "network.deny", "network.secrets"}));
  // Accepted in writing: not enforced, not refused.
  Enforcement allow = docker::DescribeControl(ControlRow{Control::kCommandsAllow, "commands.allow", "", "", ""}, gvisor);
  EXPECT_EQ(allow.verdict, Verdict::kAccepted);
  gvisor.gvisor_accept_weaker = false;
  EXPECT_EQ(docker::DescribeControl(ControlRow{Control::kRuntime, "container.runtime", "", "", ""}, gvisor).verdict,
            Verdict::kRefused);
}

}  // namespace
}  // namespace lsb

namespace lsb {
namespace {

// docs/policy.md's table of controls is the table itself (regenerate it with `llm-sandbox policy
// controls` between its two markers), so a row added to controls.h cannot go undocumented.
TEST(PolicyControls, TheDocsTableIsTheControlsTable) {
  std::ifstream in(std::string(LSB_SOURCE_DIR) + "/docs/policy.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const std::string begin = "<!-- controls: generated by `llm-sandbox policy controls` -->\n";
  const std::string end = "<!-- controls: end -->";
  size_t from = doc.find(begin);
  ASSERT_NE(from, std::string::npos) << "docs/policy.md has no '" << begin << "' marker";
  from += begin.size();
  size_t to = doc.find(end, from);
  ASSERT_NE(to, std::string::npos) << "docs/policy.md has no '" << end << "' marker";
  EXPECT_EQ(doc.substr(from, to - from), ControlsMarkdown())
      << "docs/policy.md's controls table is stale: paste the output of `llm-sandbox policy controls`";
}

}  // namespace
}  // namespace lsb
