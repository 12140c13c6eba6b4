// A warm pool hands a box to a request only when the request's policy has the box's shape
// (Backend::BoxShape): native, the JSON of init's BoxSetup and of the LaunchPlan; Docker, its
// container spec (JSON already) and the BoxSetup. A field of these structs left out of its
// serializer would let two different boxes share one shape, and a request get a box built for
// another policy. Each struct here has every field named in a structured binding (a field added
// breaks the build there) and changed one at a time: each change must change the serialized form
// and survive a round trip through it.
//
// When this fails to build ("N names provided for structured binding" / "but ... has M members"):
// a field was added to the struct. Add it to the struct's serializer (the NLOHMANN_DEFINE_... line
// or the hand-written to_json/from_json beside it), then name it in the binding below and give it
// a case that sets a non-default value, and raise the k...Fields count.
// When a case fails at run time: that field is missing from the serializer named in the message.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "policy/policy.h"
#include "protocol/messages.h"
#include "runtime/native/box_cgroup.h"
#include "runtime/native/native_backend.h"

namespace lsb {
namespace {

using nlohmann::json;

// Each Change(s, i) sets field i of `s` to a value other than its default and returns the field's
// name; nullptr past the last field.

constexpr int kBoxSetupFields = 25;  // the names in the binding below
const char* Change(protocol::BoxSetup& s, int i) {
  auto& [protocol, mode, rootfs, read_only, tmpfs, mounts, job_dir, hostname, network_enabled, allow, deny, uid, gid,
         trace, gvisor_accept_weaker, layers, image_env, image_workdir, egress_proxy, egress_ca_pem, readable, fork,
         fork_fds, font_cache_name, font_cache] = s;
  switch (i) {
    case 0: protocol += 1; return "protocol";
    case 1: mode = protocol::BoxMode::kInPlace; return "mode";
    case 2: rootfs = "image"; return "rootfs";
    case 3: read_only = !read_only; return "read_only";
    case 4: tmpfs.push_back({"/tmp"}); return "tmpfs";
    case 5: mounts.push_back({"/srv/data", "/data"}); return "mounts";
    case 6: job_dir = "/run/other-job"; return "job_dir";
    case 7: hostname = "other-host"; return "hostname";
    case 8: network_enabled = !network_enabled; return "network_enabled";
    case 9: allow.push_back("/usr/bin/python3"); return "allow";
    case 10: deny.push_back("/usr/bin/curl"); return "deny";
    case 11: uid += 1; return "uid";
    case 12: gid += 1; return "gid";
    case 13: trace = !trace; return "trace";
    case 14: gvisor_accept_weaker = !gvisor_accept_weaker; return "gvisor_accept_weaker";
    case 15: layers.push_back("/var/lib/layers/1"); return "layers";
    case 16: image_env.push_back("A=B"); return "image_env";
    case 17: image_workdir = "/app"; return "image_workdir";
    case 18: egress_proxy = protocol::kEgressProxyAddress; return "egress_proxy";
    case 19: egress_ca_pem = "-----BEGIN CERTIFICATE-----"; return "egress_ca_pem";
    case 20: readable.push_back("/opt/tool"); return "readable";
    case 21: fork = "zygote"; return "fork";
    case 22: fork_fds.push_back(3); return "fork_fds";
    case 23: font_cache_name = "fontlist-v330.json"; return "font_cache_name";
    case 24: font_cache = "{}"; return "font_cache";
    default: return nullptr;
  }
}

constexpr int kTmpfsSpecFields = 6;
const char* Change(protocol::TmpfsSpec& s, int i) {
  auto& [path, size_bytes, mode, noexec, nosuid, nodev] = s;
  switch (i) {
    case 0: path = "/tmp/other"; return "path";
    case 1: size_bytes += 4096; return "size_bytes";
    case 2: mode = 0700; return "mode";
    case 3: noexec = !noexec; return "noexec";
    case 4: nosuid = !nosuid; return "nosuid";
    case 5: nodev = !nodev; return "nodev";
    default: return nullptr;
  }
}

constexpr int kMountSpecFields = 5;
const char* Change(protocol::MountSpec& s, int i) {
  auto& [source, target, mode, size_bytes, fd] = s;
  switch (i) {
    case 0: source = "/srv/other"; return "source";
    case 1: target = "/other"; return "target";
    case 2: mode = "overlay"; return "mode";
    case 3: size_bytes += 4096; return "size_bytes";
    case 4: fd = 7; return "fd";
    default: return nullptr;
  }
}

constexpr int kLaunchPlanFields = 4;
const char* Change(native::LaunchPlan& s, int i) {
  auto& [limits, new_net, egress, refused] = s;
  switch (i) {
    case 0: limits.pids = 64; return "limits";
    case 1: new_net = !new_net; return "new_net";
    case 2: egress.enabled = !egress.enabled; return "egress";
    case 3: refused = "no user namespaces"; return "refused";
    default: return nullptr;
  }
}

constexpr int kCgroupLimitsFields = 3;
const char* Change(native::CgroupLimits& s, int i) {
  auto& [memory_bytes, cpu, pids] = s;
  switch (i) {
    case 0: memory_bytes += 1 << 20; return "memory_bytes";
    case 1: cpu += 0.5; return "cpu";
    case 2: pids += 16; return "pids";
    default: return nullptr;
  }
}

constexpr int kEgressPlanFields = 4;
const char* Change(native::EgressPlan& s, int i) {
  auto& [enabled, allow, deny, secrets] = s;
  switch (i) {
    case 0: enabled = !enabled; return "enabled";
    case 1: allow.push_back("pypi.org"); return "allow";
    case 2: deny.push_back("evil.example"); return "deny";
    case 3: secrets.push_back({"api.example", "Authorization", "Bearer ${TOKEN}"}); return "secrets";
    default: return nullptr;
  }
}

// Serialized inside EgressPlan (its to_json writes each as [host, header, value]).
constexpr int kNetworkSecretFields = 3;
const char* Change(NetworkSecret& s, int i) {
  auto& [host, header, value] = s;
  switch (i) {
    case 0: host = "other.example"; return "host";
    case 1: header = "X-Api-Key"; return "header";
    case 2: value = "${OTHER}"; return "value";
    default: return nullptr;
  }
}

// The serialized form the shape is made of, and a value read back from it.
template <typename T>
json Serialize(const T& v) {
  return json(v);
}
json Serialize(const NetworkSecret& s) { return json(native::EgressPlan{false, {}, {}, {s}}); }

template <typename T>
T ReadBack(const json& j) {
  return j.get<T>();
}
template <>
NetworkSecret ReadBack<NetworkSecret>(const json& j) {
  auto plan = j.get<native::EgressPlan>();
  return plan.secrets.empty() ? NetworkSecret{} : plan.secrets.front();
}

// Every field, changed alone from `base`, changes the serialized form and reads back as written.
template <typename T>
void ExpectEveryFieldSerialized(const char* type, int fields, const T& base = T{}) {
  const json base_form = Serialize(base);
  for (int i = 0; i < fields; ++i) {
    T changed = base;
    const char* name = Change(changed, i);
    ASSERT_NE(name, nullptr) << type << ": field " << i << " has no case in its Change(): add one";
    json form = Serialize(changed);
    EXPECT_NE(form, base_form) << type << "." << name
                               << " is not in its serializer: two boxes differing only in it share a shape";
    EXPECT_EQ(Serialize(ReadBack<T>(form)), form) << type << "." << name << " does not read back from its JSON";
  }
  T past = base;
  EXPECT_EQ(Change(past, fields), nullptr) << type << ": more cases than fields; fix k" << type << "Fields";
}

TEST(BoxShapeFields, BoxSetupEveryFieldIsInTheShape) {
  ExpectEveryFieldSerialized<protocol::BoxSetup>("BoxSetup", kBoxSetupFields);
}

TEST(BoxShapeFields, TmpfsAndMountSpecsEveryFieldIsInTheShape) {
  ExpectEveryFieldSerialized<protocol::TmpfsSpec>("TmpfsSpec", kTmpfsSpecFields, {"/tmp"});
  ExpectEveryFieldSerialized<protocol::MountSpec>("MountSpec", kMountSpecFields, {"/srv/data", "/data"});
}

TEST(BoxShapeFields, LaunchPlanEveryFieldIsInTheShape) {
  ExpectEveryFieldSerialized<native::LaunchPlan>("LaunchPlan", kLaunchPlanFields);
  ExpectEveryFieldSerialized<native::CgroupLimits>("CgroupLimits", kCgroupLimitsFields);
  ExpectEveryFieldSerialized<native::EgressPlan>("EgressPlan", kEgressPlanFields);
  ExpectEveryFieldSerialized<NetworkSecret>("NetworkSecret", kNetworkSecretFields, {"api.example", "Authorization", "x"});
}

// The native backend's shape itself (what its pool keys boxes by) moves with every BoxSetup field:
// it is these serializers' output, whole.
TEST(BoxShapeFields, TheNativeShapeMovesWithEveryBoxSetupField) {
  native::NativeBackend backend;
  Policy policy;
  policy.name = "shape";
  auto base = backend.BoxShape(policy, {});
  ASSERT_TRUE(base.ok()) << base.error().message;
  for (int i = 0; i < kBoxSetupFields; ++i) {
    protocol::BoxSetup setup;
    const char* name = Change(setup, i);
    auto shape = backend.BoxShape(policy, setup);
    ASSERT_TRUE(shape.ok()) << shape.error().message;
    EXPECT_NE(*shape, *base) << "BoxSetup." << name;
  }
}

}  // namespace
}  // namespace lsb
