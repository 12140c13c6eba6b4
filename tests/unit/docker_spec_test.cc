// Policy -> container create body, endpoint parsing and the image map's docker section.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "runtime/docker/container_spec.h"
#include "runtime/docker/endpoint.h"
#include "runtime/docker/image_resolver.h"
#include "runtime/docker/seccomp_profile.h"

namespace lsb::docker {
namespace {

Policy SeedLike() {
  Policy p;
  p.name = "code-sandbox";
  p.image = "python:3.12-slim";
  p.read_only = true;
  TmpfsMount t;
  t.path = "/tmp";
  t.size_bytes = 100ull << 20;
  t.mode = 01777;
  t.noexec = true;
  t.nosuid = true;
  t.nodev = true;
  p.tmpfs.push_back(t);
  p.cpu = 0.5;
  p.memory_bytes = 256ull << 20;
  p.pids = 64;
  return p;
}

TEST(DockerSpec, MapsEveryOuterControl) {
  SpecInputs in{.image = "llm-sandbox/python:3.11-test", .init_host_path = "/opt/lsb/llm-sandbox-init",
                .owner = "host/42/777", .pooled = false, .seccomp_opt = ""};
  auto s = BuildContainerSpec(SeedLike(), in);
  EXPECT_EQ(s["Image"], "llm-sandbox/python:3.11-test");
  EXPECT_EQ(s["Entrypoint"][0], kInitInContainer);
  EXPECT_EQ(s["User"], "1000:1000");
  EXPECT_EQ(s["Tty"], false);
  EXPECT_EQ(s["OpenStdin"], true);
  EXPECT_EQ(s["StdinOnce"], true);
  EXPECT_EQ(s["Labels"][kLabelOwner], "host/42/777");
  const auto& h = s["HostConfig"];
  EXPECT_EQ(h["ReadonlyRootfs"], true);
  EXPECT_EQ(h["NetworkMode"], "none");
  EXPECT_EQ(h["CapDrop"][0], "ALL");
  EXPECT_EQ(h["SecurityOpt"][0], "no-new-privileges");
  EXPECT_EQ(h["Memory"], 256ull << 20);
  EXPECT_EQ(h["MemorySwap"], 256ull << 20);
  EXPECT_EQ(h["NanoCpus"], 500000000);
  EXPECT_EQ(h["PidsLimit"], 64);
  EXPECT_EQ(h["Runtime"], "runc");
  EXPECT_EQ(h["Binds"][0], "/opt/lsb/llm-sandbox-init:/.llm-sandbox/init:ro");
  EXPECT_EQ(h["Tmpfs"]["/tmp"], "rw,size=104857600,mode=1777,noexec,nosuid,nodev");
  EXPECT_EQ(h["Tmpfs"][kJobDir], "rw,size=16777216,mode=1777,noexec,nosuid,nodev");
}

TEST(DockerSpec, AFilteredNetworkIsNetworkModeNoneWithItsLoopback) {
  Policy p = SeedLike();
  p.network_enabled = true;
  p.network_allow = {"pypi.org"};
  SpecInputs in{.image = "img", .init_host_path = "/init", .owner = "o", .pooled = false, .seccomp_opt = ""};
  auto s = BuildContainerSpec(p, in);
  // The egress proxy's socket is made in this namespace once the container runs (egress_attach.h).
  EXPECT_EQ(s["HostConfig"]["NetworkMode"], "none");
  EXPECT_EQ(s["NetworkDisabled"], true);  // runc's namespace has lo up; no engine networking needed
}

TEST(DockerSpec, NetworkOnRunscAndCustomSeccomp) {
  Policy p = SeedLike();
  p.network_enabled = true;
  p.network_allow = {"*"};  // the bridge: only allow ["*"] joins it
  p.runtime = ContainerRuntime::kRunsc;
  p.memory_bytes = 0;
  p.cpu = 0;
  SpecInputs in{.image = "img", .init_host_path = "/init", .owner = "o", .pooled = true,
                .seccomp_opt = "seccomp={\"defaultAction\":\"SCMP_ACT_ERRNO\"}"};
  auto s = BuildContainerSpec(p, in);
  const auto& h = s["HostConfig"];
  EXPECT_EQ(h["NetworkMode"], kIsolatedNetwork);
  EXPECT_EQ(h["Runtime"], "runsc");
  EXPECT_FALSE(h.contains("Memory"));
  EXPECT_FALSE(h.contains("NanoCpus"));
  EXPECT_EQ(h["SecurityOpt"][1], "seccomp={\"defaultAction\":\"SCMP_ACT_ERRNO\"}");
  EXPECT_EQ(s["Labels"][kLabelPool], "1");
}

TEST(DockerSpec, PidsLimitUnderRunscIsGvisorsNprocWithAHostCeiling) {
  SpecInputs in{.image = "img", .init_host_path = "/init", .owner = "o", .pooled = false,
                .seccomp_opt = ""};
  auto runc = BuildContainerSpec(SeedLike(), in)["HostConfig"];
  EXPECT_EQ(runc["PidsLimit"], 64);
  for (const auto& u : runc["Ulimits"]) EXPECT_NE(u["Name"], "nproc") << "runc: NPROC would count host-wide";
  Policy p = SeedLike();
  p.runtime = ContainerRuntime::kRunsc;
  auto h = BuildContainerSpec(p, in)["HostConfig"];
  EXPECT_EQ(h["PidsLimit"], 64 * kGvisorHostPidsPerTask + kGvisorHostPidsBase);
  bool nproc = false;
  for (const auto& u : h["Ulimits"]) {
    if (u["Name"] != "nproc") continue;
    nproc = true;
    EXPECT_EQ(u["Soft"], 64);
    EXPECT_EQ(u["Hard"], 64);
  }
  EXPECT_TRUE(nproc);
  EXPECT_EQ(h["Ulimits"][0]["Name"], "core");
}

// Issue 15: the host's boot parameters and boot id are masked on runc, on top of the engine's own
// masked paths (a list given replaces them, so they must all be there); gVisor's /proc is its own.
TEST(DockerSpec, MasksHostBootIdentityOnRunc) {
  SpecInputs in{.image = "i", .init_host_path = "/i", .owner = "o", .pooled = false, .seccomp_opt = ""};
  auto s = BuildContainerSpec(SeedLike(), in);
  std::set<std::string> masked;
  for (const auto& m : s["HostConfig"]["MaskedPaths"]) masked.insert(m.get<std::string>());
  for (const char* p : {"/proc/cmdline", "/proc/bootconfig", "/proc/sys/kernel/random/boot_id", "/proc/kcore",
                        "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/proc/acpi", "/proc/scsi",
                        "/sys/firmware"})
    EXPECT_TRUE(masked.count(p)) << p;
  Policy g = SeedLike();
  g.runtime = ContainerRuntime::kRunsc;
  EXPECT_FALSE(BuildContainerSpec(g, in)["HostConfig"].contains("MaskedPaths"));
}

TEST(DockerEndpoint, Parses) {
  auto u = ParseEndpoint("unix:///run/podman/podman.sock");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->kind, Endpoint::Kind::kUnix);
  EXPECT_EQ(u->path, "/run/podman/podman.sock");
  auto t = ParseEndpoint("tcp://127.0.0.1:2375");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->host, "127.0.0.1");
  EXPECT_EQ(t->port, 2375);
  EXPECT_EQ(t->ToString(), "tcp://127.0.0.1:2375");
  auto v6 = ParseEndpoint("tcp://[::1]:2375");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->ToString(), "tcp://[::1]:2375");
  EXPECT_FALSE(ParseEndpoint("tcp://host").ok());
  EXPECT_FALSE(ParseEndpoint("unix://relative").ok());
  EXPECT_FALSE(ParseEndpoint("ssh://me@host").ok());
  EXPECT_FALSE(ParseEndpoint("tcp://h:99999").ok());
}

TEST(DockerImages, DockerSectionAndEnv) {
  auto m = ImageResolver::ParseDockerSection(
      "images:\n  \"python:3.12-slim\": host\ndocker:\n  \"python:3.12-slim\": llm-sandbox/python:3.11-test\n",
      "images.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->at("python:3.12-slim"), "llm-sandbox/python:3.11-test");
  auto bad = ImageResolver::ParseDockerSection("docker:\n  a: [1, 2]\n", "f.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("f.yaml:2"), std::string::npos);
  auto e = ImageResolver::ParseEnv("a=b,python:3.12-slim=local/py:1");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->at("python:3.12-slim"), "local/py:1");
  EXPECT_FALSE(ImageResolver::ParseEnv("nonsense").ok());
  ImageResolver r;
  r.Set("x", "y");
  EXPECT_EQ(r.Map("x"), "y");
  EXPECT_EQ(r.Map("z"), "z");
}

TEST(DockerSeccompProfile, AllowlistLetsWatchedEscapesReachInit) {
  auto text = EngineSeccompProfile();
  ASSERT_TRUE(text.ok()) << text.error().message;
  auto p = nlohmann::json::parse(*text);
  EXPECT_EQ(p["defaultAction"], "SCMP_ACT_ERRNO");
  EXPECT_EQ(p["defaultErrnoRet"], 1);
  ASSERT_EQ(p["syscalls"].size(), 1u);
  EXPECT_EQ(p["syscalls"][0]["action"], "SCMP_ACT_ALLOW");
  std::set<std::string> names = p["syscalls"][0]["names"].get<std::set<std::string>>();
  for (const char* must : {"read", "execve", "clone", "landlock_create_ruleset", "seccomp", "prctl"})
    EXPECT_TRUE(names.count(must)) << must;
  // Watched by init (EPERM + escape_syscall alert): the engine must not answer first.
  for (const char* watched : {"mount", "unshare", "chroot", "setns", "bpf", "keyctl"})
    EXPECT_TRUE(names.count(watched)) << watched;
  // Refused silently by init: refused by the engine as well.
  for (const char* refused : {"userfaultfd", "io_uring_setup", "perf_event_open", "memfd_create", "iopl"})
    EXPECT_FALSE(names.count(refused)) << refused;
}

TEST(DockerSeccompProfile, NativeArchitectureOnly) {
  auto text = EngineSeccompProfile();
  ASSERT_TRUE(text.ok()) << text.error().message;
  auto p = nlohmann::json::parse(*text);
  // Foreign-architecture calls (i386 int 0x80, x32) have no place in the box: init's filter kills
  // them, and the engine's profile does not list those architectures, so the engine kills them too.
  if (p.contains("architectures")) {
    ASSERT_EQ(p["architectures"].size(), 1u);
#if defined(__x86_64__)
    EXPECT_EQ(p["architectures"][0], "SCMP_ARCH_X86_64");
#elif defined(__aarch64__)
    EXPECT_EQ(p["architectures"][0], "SCMP_ARCH_AARCH64");
#endif
  }
}

}  // namespace
}  // namespace lsb::docker
