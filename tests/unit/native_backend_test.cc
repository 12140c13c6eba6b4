#include <gtest/gtest.h>

#include <cstdlib>

#include <algorithm>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "base/io.h"
#include "protocol/frame.h"
#include "runtime/native/box_cgroup.h"
#include "runtime/native/idmap.h"
#include "runtime/native/init_binary.h"
#include "runtime/native/native_backend.h"
#include "runtime/native/native_box.h"

namespace lsb::native {
namespace {

Policy HostPolicy() {
  Policy p;
  p.name = "t";
  p.image = "host";
  p.memory_bytes = 64 << 20;
  p.cpu = 0.5;
  p.pids = 32;
  return p;
}

std::string Slurp(const std::string& path) {
  auto r = ReadFile(path);
  return r.ok() ? *r : "";
}

bool DirExists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

TEST(IdMap, PlansForRootAndUnprivileged) {
  auto root = PlanIdMap(true, 0, 0, 100000);
  EXPECT_EQ(root.uid_map, "0 100000 65536\n");
  EXPECT_TRUE(root.Maps(1000));
  EXPECT_FALSE(root.deny_setgroups);
  auto user = PlanIdMap(false, 1234, 1234);
  EXPECT_EQ(user.uid_map, "0 1234 1\n");
  EXPECT_TRUE(user.deny_setgroups);
  EXPECT_FALSE(user.Maps(1000));
  EXPECT_TRUE(user.Maps(0));
}

TEST(InitBinary, MissingInitSaysHowToFix) {
  auto r = OpenInitBinary("/nonexistent/llm-sandbox-init");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("LLM_SANDBOX_INIT"), std::string::npos);
  EXPECT_NE(r.error().message.find("/nonexistent/llm-sandbox-init"), std::string::npos);
}

TEST(NativeBackend, CheckNamesUnmappedImageAndRuntime) {
  NativeOptions o;
  o.images_file = std::string(LSB_SOURCE_DIR) + "/config/images.yaml";
  NativeBackend b(o);
  Policy p = HostPolicy();
  p.image = "ruby:3";
  p.runtime = ContainerRuntime::kRunsc;
  auto st = b.Check(p);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("container.image: container.image 'ruby:3' is not in the image map"), std::string::npos)
      << st.error().message;
  EXPECT_NE(st.error().message.find("container.runtime"), std::string::npos);
}

TEST(NativeBackend, SetupForUsesTheImageMap) {
  NativeOptions o;
  o.images_file = std::string(LSB_SOURCE_DIR) + "/config/images.yaml";
  NativeBackend b(o);
  Policy p = HostPolicy();
  p.image = "python:3.12-slim";
  p.tmpfs.push_back(TmpfsMount{"/tmp", 1 << 20, 01777, true, true, true, "size=1M"});
  p.allow = {"/usr/bin/python3"};
  auto s = b.SetupFor(p);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->mode, protocol::BoxMode::kBuildRoot);
  EXPECT_EQ(s->rootfs, "host");
  ASSERT_EQ(s->tmpfs.size(), 1u);
  EXPECT_EQ(s->tmpfs[0].size_bytes, 1u << 20);
  EXPECT_EQ(s->allow, p.allow);
}

// Issue 19: network on is the box's own namespace with only the egress proxy (was: refused).
TEST(NativeBackend, NetworkEnabledIsTheEgressProxyNeverTheHostsNamespace) {
  NativeBackend b;
  Policy p = HostPolicy();
  p.network_enabled = true;
  p.network_allow = {"pypi.org"};
  bool proxy = false;
  for (const auto& c : b.Explain(p))
    if (c.control == "network.enabled") proxy = c.enforced && c.how.find("egress proxy") != std::string::npos;
  EXPECT_TRUE(proxy);
  LaunchPlan plan = b.PlanLaunch(p);
  EXPECT_TRUE(plan.new_net);
  EXPECT_TRUE(plan.egress.enabled);
  EXPECT_EQ(plan.egress.allow, p.network_allow);
  EXPECT_EQ(plan.refused, "");
  // The allowlist is part of the box's shape: a pool never hands a box made for another list.
  Policy other = p;
  other.network_allow = {"files.pythonhosted.org"};
  EXPECT_NE(*b.BoxShape(p, {}), *b.BoxShape(other, {}));
}

TEST(NativeBackend, NetworkSecretsAreEnforcedByTheProxyAndPartOfTheBoxShape) {
  NativeBackend b;
  Policy p = HostPolicy();
  p.network_enabled = true;
  p.network_allow = {"api.example.com"};
  p.network_secrets = {NetworkSecret{"api.example.com", "Authorization", "Bearer ${T}"}};
  bool found = false;
  for (const auto& c : b.Explain(p))
    if (c.control == "network.secrets") found = c.enforced;
  EXPECT_TRUE(found);
  LaunchPlan plan = b.PlanLaunch(p);
  EXPECT_TRUE(plan.refused.find("network.secrets") == std::string::npos) << plan.refused;
  ASSERT_EQ(plan.egress.secrets.size(), 1u);
  Policy other = p;
  other.network_secrets[0].value = "Bearer ${U}";
  EXPECT_NE(*b.BoxShape(p, {}), *b.BoxShape(other, {}));
}

// A box whose "init" is /bin/cat: it echoes the stream, so the outer box can be inspected live.
class RootBox : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (full id map and cgroups)";
    NativeOptions o;
    o.init_path = "/bin/cat";
    backend_ = std::make_unique<NativeBackend>(o);
  }
  std::unique_ptr<NativeBackend> backend_;
};

TEST_F(RootBox, StartsInNamespacesWithCgroupLimitsAndCleansUp) {
  protocol::BoxSetup setup;
  setup.rootfs = "host-for-the-test";
  auto box = backend_->Start(HostPolicy(), setup, std::nullopt);
  ASSERT_TRUE(box.ok()) << (box.ok() ? "" : box.error().message);
  auto* nb = static_cast<NativeBox*>(box->get());
  pid_t pid = nb->init_pid();
  std::string proc = "/proc/" + std::to_string(pid);

  // The setup is the stream's first frame, there before init runs (cat echoes it).
  auto first = protocol::ReadFrame((*box)->stream_fd());
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->type, protocol::FrameType::kSetup);
  EXPECT_NE(first->payload.find("host-for-the-test"), std::string::npos) << first->payload;
  // The stream works both ways (cat echoes a frame).
  ASSERT_TRUE(protocol::WriteFrame((*box)->stream_fd(), protocol::FrameType::kStdout, "ping").ok());
  auto f = protocol::ReadFrame((*box)->stream_fd());
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->payload, "ping");

  std::string oom = Slurp(proc + "/oom_score_adj");
  EXPECT_TRUE(oom == "-1000\n" || oom == "0\n") << oom;  // -1000 needs CAP_SYS_RESOURCE
  std::istringstream um(Slurp(proc + "/uid_map"));
  uint64_t in = 1, out = 0, count = 0;
  um >> in >> out >> count;
  EXPECT_EQ(in, 0u);
  EXPECT_EQ(out, kDefaultIdBase);
  EXPECT_EQ(count, kDefaultIdCount);
  for (const char* ns : {"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"}) {
    char a[64] = {}, b[64] = {};
    ASSERT_GT(::readlink(("/proc/self/ns/" + std::string(ns)).c_str(), a, sizeof a - 1), 0);
    ASSERT_GT(::readlink((proc + "/ns/" + ns).c_str(), b, sizeof b - 1), 0);
    EXPECT_STRNE(a, b) << ns;
  }
  // fds: only 0, 1, 2.
  int fds = 0;
  for (int i = 0; i < 64; ++i)
    if (::access((proc + "/fd/" + std::to_string(i)).c_str(), F_OK) == 0) ++fds;
  EXPECT_EQ(fds, 3);

  // Cgroups: find ours through /proc/<pid>/cgroup + the live layout.
  auto layout = DetectCgroupLayout();
  std::string mem_dir = layout.Get("memory").dir() + "/llm-sandbox/" + (*box)->id();
  std::string pids_dir = layout.Get("pids").dir() + "/llm-sandbox/" + (*box)->id();
  if (layout.Get("memory").version == CgroupVersion::kV1) {
    EXPECT_EQ(Slurp(mem_dir + "/memory.limit_in_bytes"), std::to_string(64 << 20) + "\n");
  } else {
    EXPECT_EQ(Slurp(mem_dir + "/memory.max"), std::to_string(64 << 20) + "\n");
  }
  EXPECT_EQ(Slurp(pids_dir + "/pids.max"), "33\n");  // 32 + init itself
  EXPECT_NE(Slurp(pids_dir + "/cgroup.procs").find(std::to_string(pid)), std::string::npos);
  auto v = (*box)->Verdict();
  EXPECT_EQ(v.oom_kill_count, 0u);
  EXPECT_TRUE(v.memory_peak_bytes.has_value());

  box->reset();
  EXPECT_FALSE(DirExists(mem_dir));
  EXPECT_FALSE(DirExists(pids_dir));
  EXPECT_NE(::access(proc.c_str(), F_OK), 0);
}

// What one /proc/sys/user file says in the user namespace of `pid` (read by a child that joined it).
std::string UserSysctlIn(pid_t pid, const std::string& name) {
  int p[2];
  if (::pipe(p) != 0) return "pipe";
  pid_t c = ::fork();
  if (c == 0) {
    ::close(p[0]);
    int ns = ::open(("/proc/" + std::to_string(pid) + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC);
    if (ns < 0 || ::setns(ns, CLONE_NEWUSER) != 0) ::_exit(1);
    auto v = ReadFile("/proc/sys/user/" + name);
    std::string out = v.ok() ? *v : "unreadable";
    (void)!::write(p[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(p[1]);
  std::string out;
  char buf[64];
  ssize_t n;
  while ((n = ::read(p[0], buf, sizeof buf)) > 0) out.append(buf, n);
  ::close(p[0]);
  ::waitpid(c, nullptr, 0);
  return out;
}

TEST(BoxUserLimits, DefaultsAreTheDocumentedOnes) {
  auto l = DefaultBoxUserLimits();
  ASSERT_EQ(l.sysctls.size(), std::size(kBoxUserNsLimits));
  EXPECT_EQ(l.sysctls[0].path, "/proc/sys/user/max_inotify_instances");
  EXPECT_EQ(l.sysctls[0].value, "16");
  EXPECT_NE(DescribeBoxUserLimits().find("RLIMIT_SIGPENDING 1024"), std::string::npos) << DescribeBoxUserLimits();
  for (int i = 0; i < 100; ++i) {
    uid_t u = PickBoxOwner(165536, 65536);
    EXPECT_GE(u, 165536u);
    EXPECT_LT(u, 165536u + 65536u);
  }
}

// Issue 15, class 4: the box's user namespace is owned by an unprivileged uid of its own (so the
// host charges its per-user counts there, not to root), and carries the box's own limits.
TEST_F(RootBox, UserNamespaceHasItsOwnOwnerAndLimits) {
  protocol::BoxSetup setup;
  auto a = backend_->Start(HostPolicy(), setup, std::nullopt);
  auto b = backend_->Start(HostPolicy(), setup, std::nullopt);
  ASSERT_TRUE(a.ok() && b.ok());
  uid_t owners[2];
  int i = 0;
  for (auto* box : {a->get(), b->get()}) {
    pid_t pid = static_cast<NativeBox*>(box)->init_pid();
    int ns = ::open(("/proc/" + std::to_string(pid) + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(ns, 0);
    uid_t owner = 0;
    ASSERT_EQ(::ioctl(ns, NS_GET_OWNER_UID, &owner), 0);
    ::close(ns);
    EXPECT_GE(owner, kDefaultIdBase + kDefaultIdCount) << "the owner must not be root nor a mapped box id";
    EXPECT_LT(owner, kDefaultIdBase + kDefaultIdCount + kDefaultOwnerCount);
    owners[i++] = owner;
    std::string limits = Slurp("/proc/" + std::to_string(pid) + "/limits");
    EXPECT_NE(limits.find("Max pending signals       1024                 1024"), std::string::npos) << limits;
    EXPECT_NE(limits.find("Max msgqueue size         262144               262144"), std::string::npos) << limits;
    EXPECT_EQ(UserSysctlIn(pid, "max_inotify_instances"), "16\n");
    EXPECT_EQ(UserSysctlIn(pid, "max_inotify_watches"), "8192\n");
    EXPECT_EQ(UserSysctlIn(pid, "max_user_namespaces"), "0\n");
  }
  // Random draws from 65536: equal once in 65536 runs.
  EXPECT_NE(owners[0], owners[1]);
  // This process (the daemon's stand-in) is root again, with its capabilities.
  EXPECT_EQ(::geteuid(), 0u);
  EXPECT_EQ(Slurp("/proc/self/status").find("CapEff:\t0000000000000000"), std::string::npos);
}

TEST_F(RootBox, SetupLargerThanTheSocketBufferStillArrivesWhole) {
  // The launcher writes kSetup before init runs, without blocking; what the buffer cannot hold
  // (a policy with a very long allow list) follows once init reads (cat echoes it here).
  // 1.5 socket buffers: more than one send can place, less than cat can hold in flight both
  // ways (its echo is not read until Start returns).
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  int sndbuf = 0;
  socklen_t len = sizeof sndbuf;
  ASSERT_EQ(::getsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, &len), 0);
  ::close(sv[0]);
  ::close(sv[1]);
  protocol::BoxSetup setup;
  std::string payload;
  for (int i = 0; payload.size() < static_cast<size_t>(sndbuf) * 3 / 2; ++i) {
    for (int j = 0; j < 100; ++j) setup.allow.push_back("/opt/tools/bin/tool-" + std::to_string(i * 100 + j));
    payload = nlohmann::json(setup).dump();
  }
  auto box = backend_->Start(HostPolicy(), setup, std::nullopt);
  ASSERT_TRUE(box.ok()) << (box.ok() ? "" : box.error().message);
  auto first = protocol::ReadFrame((*box)->stream_fd());
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->type, protocol::FrameType::kSetup);
  EXPECT_EQ(first->payload, payload);
}

TEST_F(RootBox, AMissingSecretVariableRefusesTheBox) {
  // Fail closed: never a box whose requests would go without the header the policy wants.
  ::unsetenv("LSB_UT_UNSET_SECRET");
  Policy p = HostPolicy();
  p.network_enabled = true;
  p.network_allow = {"api.example.com"};
  p.network_secrets = {NetworkSecret{"api.example.com", "Authorization", "Bearer ${LSB_UT_UNSET_SECRET}"}};
  auto box = backend_->Start(p, {}, std::nullopt);
  ASSERT_FALSE(box.ok());
  EXPECT_NE(box.error().message.find("${LSB_UT_UNSET_SECRET}"), std::string::npos) << box.error().message;
}

// The box's network namespace is its own and listens only on the egress proxy's address, made by
// the launcher's child there (the host's namespace does not get it).
TEST_F(RootBox, NetworkOnBoxHasOnlyTheProxyListenerInItsOwnNamespace) {
  Policy p = HostPolicy();
  p.network_enabled = true;
  auto box = backend_->Start(p, {}, std::nullopt);
  ASSERT_TRUE(box.ok()) << (box.ok() ? "" : box.error().message);
  pid_t pid = static_cast<NativeBox*>(box->get())->init_pid();
  char a[64] = {}, b[64] = {};
  ASSERT_GT(::readlink("/proc/self/ns/net", a, sizeof a - 1), 0);
  ASSERT_GT(::readlink(("/proc/" + std::to_string(pid) + "/ns/net").c_str(), b, sizeof b - 1), 0);
  EXPECT_STRNE(a, b);
  std::string tcp = Slurp("/proc/" + std::to_string(pid) + "/net/tcp");
  EXPECT_NE(tcp.find("0100007F:0C38 00000000:0000 0A"), std::string::npos) << tcp;  // 127.0.0.1:3128 LISTEN
  EXPECT_EQ(std::count(tcp.begin(), tcp.end(), '\n'), 2) << tcp;                    // header + that one
}

TEST_F(RootBox, InitThatCannotExecIsAClearError) {
  NativeOptions o;
  o.init_path = "/etc/hostname";  // a regular file, not executable
  NativeBackend b(o);
  auto box = b.Start(HostPolicy(), {}, std::nullopt);
  ASSERT_FALSE(box.ok());
  EXPECT_NE(box.error().message.find("llm-sandbox-init"), std::string::npos) << box.error().message;
}

TEST_F(RootBox, BoxCgroupsAreRemovedEvenWithProcessesLeft) {
  auto layout = DetectCgroupLayout();
  auto cg = BoxCgroups::Create(layout, "llm-sandbox", "test-leftover", CgroupLimits{16 << 20, 0, 8});
  ASSERT_TRUE(cg.ok()) << cg.error().message;
  pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  ASSERT_TRUE((*cg)->AddProcess(child).ok());
  auto dirs = (*cg)->dirs();
  auto st = (*cg)->Destroy();
  EXPECT_TRUE(st.ok()) << st.error().message;
  int ws = 0;
  ASSERT_EQ(::waitpid(child, &ws, 0), child);
  EXPECT_TRUE(WIFSIGNALED(ws));
  for (const auto& d : dirs) EXPECT_FALSE(DirExists(d)) << d;
}


TEST_F(RootBox, TeardownHelperRemovesTheBoxAfterDetach) {
  auto box = backend_->Start(HostPolicy(), {}, std::nullopt);
  ASSERT_TRUE(box.ok()) << (box.ok() ? "" : box.error().message);
  auto* nb = static_cast<NativeBox*>(box->get());
  auto layout = DetectCgroupLayout();
  std::string pids_dir = layout.Get("pids").dir() + "/llm-sandbox/" + (*box)->id();
  ASSERT_TRUE(nb->ArmTeardownHelper());
  EXPECT_TRUE(DirExists(pids_dir));  // armed: nothing torn down yet
  ASSERT_TRUE(nb->DetachTeardown());
  box->reset();  // returns at once; the helper finishes the job
  bool gone = false;
  for (int i = 0; i < 300 && !gone; ++i) {
    gone = !DirExists(pids_dir);
    if (!gone) ::usleep(10000);
  }
  EXPECT_TRUE(gone) << pids_dir;
}

TEST_F(RootBox, ArmedBoxDestroyedWithoutDetachIsGoneOnReturn) {
  auto box = backend_->Start(HostPolicy(), {}, std::nullopt);
  ASSERT_TRUE(box.ok()) << (box.ok() ? "" : box.error().message);
  auto layout = DetectCgroupLayout();
  std::string pids_dir = layout.Get("pids").dir() + "/llm-sandbox/" + (*box)->id();
  ASSERT_TRUE(static_cast<NativeBox*>(box->get())->ArmTeardownHelper());
  box->reset();  // an interrupted run: the destructor waits for the helper
  EXPECT_FALSE(DirExists(pids_dir));
}

TEST_F(RootBox, StaleBoxGroupsAreRemovedOnlyWhenOldAndEmpty) {
  auto layout = DetectCgroupLayout();
  const std::string parent = "llm-sandbox-stale-test";
  auto make = [&](const std::string& id) {
    auto cg = BoxCgroups::Create(layout, parent, id, CgroupLimits{16 << 20, 0, 8});
    EXPECT_TRUE(cg.ok()) << cg.error().message;
    return std::move(*cg);
  };
  auto backdate = [](const std::vector<std::string>& dirs) {
    struct timespec old[2] = {{1577836800, 0}, {1577836800, 0}};  // 2020-01-01
    for (const auto& d : dirs) ::utimensat(AT_FDCWD, d.c_str(), old, 0);
  };
  auto old_empty = make("native-old-empty");
  auto old_busy = make("native-old-busy");
  auto young = make("native-young-empty");
  auto other = make("pool-not-a-box");
  pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  ASSERT_TRUE(old_busy->AddProcess(child).ok());
  backdate(old_empty->dirs());
  backdate(old_busy->dirs());
  backdate(other->dirs());
  auto gone_dirs = old_empty->dirs();
  old_empty->Release();  // as a killed daemon would: its object never removes them

  EXPECT_GE(RemoveStaleBoxGroups(layout, parent, std::chrono::seconds(60)), 1u);
  for (const auto& d : gone_dirs) EXPECT_FALSE(DirExists(d)) << d;
  for (const auto& d : old_busy->dirs()) EXPECT_TRUE(DirExists(d)) << d;  // a process inside
  for (const auto& d : young->dirs()) EXPECT_TRUE(DirExists(d)) << d;     // may be starting
  for (const auto& d : other->dirs()) EXPECT_TRUE(DirExists(d)) << d;     // not a box group
  EXPECT_TRUE(old_busy->Destroy().ok());
  int ws = 0;
  ::waitpid(child, &ws, 0);
  auto parents = young->dirs();
  young.reset();
  other.reset();
  for (auto& d : parents) ::rmdir(d.substr(0, d.rfind('/')).c_str());  // the test's own parent
}

}  // namespace
}  // namespace lsb::native
