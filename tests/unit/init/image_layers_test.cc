// An image root's pieces in init: the overlay of layers (mounted for real in a fresh user+mount
// namespace, as an unprivileged user, as a box's init does), and how commands, environment and
// cwd are found in an image (command_path.h, image_config.h, ExecPolicy with the image's PATH).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <grp.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "init/command_path.h"
#include "init/exec_policy.h"
#include "init/image_config.h"
#include "init/layers.h"
#include "protocol/messages.h"

namespace lsb::init {
namespace {

std::string MakeTempDir(const char* tag) {
  std::string tmpl = "/tmp/lsb-" + std::string(tag) + "-XXXXXX";
  EXPECT_NE(::mkdtemp(tmpl.data()), nullptr);
  ::chmod(tmpl.c_str(), 0755);
  return tmpl;
}

void WriteText(const std::string& path, const std::string& text, mode_t mode = 0644) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
}

void RemoveTree(const std::string& dir) { (void)std::system(("rm -rf '" + dir + "'").c_str()); }

TEST(ImageLayers, OverlayOptionsListTopLayerFirstByShortNames) {
  auto opts = OverlayOptions({5, 6, 7});
  ASSERT_TRUE(opts.ok()) << opts.error().message;
  EXPECT_EQ(*opts, "lowerdir=/proc/self/fd/7:/proc/self/fd/6:/proc/self/fd/5,userxattr");
}

TEST(ImageLayers, TheMostLayersFitTheKernelsOptionPage) {
  std::vector<int> fds;
  for (size_t i = 0; i < protocol::kMaxImageLayers; ++i) fds.push_back(static_cast<int>(9000 + i));  // 4-digit fds
  auto opts = OverlayOptions(fds);
  ASSERT_TRUE(opts.ok()) << opts.error().message;
  EXPECT_LT(opts->size(), 4096u);
  std::printf("[ measure ] overlay options for %zu layers: %zu bytes\n", fds.size(), opts->size());
}

TEST(ImageLayers, OpenLayersRefusesNoneTooManyAndRelative) {
  EXPECT_FALSE(OpenLayers({}).ok());
  std::vector<std::string> many(protocol::kMaxImageLayers + 1, "/");
  auto too_many = OpenLayers(many);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.error().message.find("at most 128"), std::string::npos) << too_many.error().message;
  auto relative = OpenLayers({"/", "usr"});
  ASSERT_FALSE(relative.ok());
  EXPECT_NE(relative.error().message.find("\"usr\""), std::string::npos);
  auto absent = OpenLayers({"/nonexistent-layer-dir"});
  ASSERT_FALSE(absent.ok());
  EXPECT_NE(absent.error().message.find("/nonexistent-layer-dir"), std::string::npos);
}

// In a child: become an unprivileged user, make a user+mount namespace mapping it to 0 (as a box
// does), mount the overlay of `layers` on `target` and run `check`; the exit status is its result.
int InUserNamespace(const std::vector<std::string>& layers, const std::string& target,
                    int (*check)(const std::string& target)) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::getuid() == 0 && (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
                            ::setresuid(65534, 65534, 65534) != 0))
      ::_exit(90);
    uid_t uid = ::getuid();
    gid_t gid = ::getgid();
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) ::_exit(91);
    {
      std::ofstream("/proc/self/setgroups") << "deny";
      std::ofstream("/proc/self/uid_map") << "0 " << uid << " 1";
      std::ofstream("/proc/self/gid_map") << "0 " << gid << " 1";
    }
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) ::_exit(92);
    auto fds = OpenLayers(layers);
    if (!fds.ok()) ::_exit(93);
    std::vector<int> raw;
    for (const auto& fd : *fds) raw.push_back(fd.get());
    auto t0 = std::chrono::steady_clock::now();
    auto st = MountOverlay(raw, target);
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.error().message.c_str());
      ::_exit(94);
    }
    std::printf("[ measure ] overlay mount of %zu layers: %lld us\n", layers.size(), static_cast<long long>(us));
    std::fflush(stdout);
    ::_exit(check(target));
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int CheckTwoLayers(const std::string& t) {
  struct stat st;
  if (::stat((t + "/etc/os-release").c_str(), &st) != 0) return 1;  // from the lower layer
  if (::stat((t + "/usr/local/bin/tool").c_str(), &st) != 0) return 2;  // from the upper layer
  if (::stat((t + "/etc/hidden").c_str(), &st) == 0 || errno != ENOENT) return 3;  // whited out
  std::ifstream f(t + "/etc/shared");
  std::string text;
  std::getline(f, text);
  if (text != "upper") return 4;  // the upper layer's copy wins
  int fd = ::open((t + "/etc/new").c_str(), O_CREAT | O_WRONLY, 0644);
  if (fd >= 0 || errno != EROFS) return 5;  // read-only: no upper layer
  if (::mkdir((t + "/opaque/x").c_str(), 0755) == 0 || errno != EROFS) return 6;
  if (::stat((t + "/opaque/old").c_str(), &st) == 0) return 7;  // opaque dir hides the lower's entries
  if (::stat((t + "/opaque/new").c_str(), &st) != 0) return 8;
  return 0;
}

TEST(ImageLayers, OverlayOfLayersMountsReadOnlyInAnUnprivilegedUserNamespace) {
  std::string base = MakeTempDir("layers");
  // Long paths, like the store's (.../sha256/<64 hex>/rootfs): the mount names them by fd.
  std::string deep = base + "/" + std::string(120, 'a') + "/" + std::string(120, 'b');
  ASSERT_EQ(std::system(("mkdir -p '" + deep + "/lower/etc' '" + deep + "/lower/opaque' '" + deep +
                         "/upper/usr/local/bin' '" + deep + "/upper/etc' '" + deep + "/upper/opaque' '" + base +
                         "/target' && chmod -R 0755 '" + base + "'").c_str()),
            0);
  WriteText(deep + "/lower/etc/os-release", "ID=lower\n");
  WriteText(deep + "/lower/etc/hidden", "x\n");
  WriteText(deep + "/lower/etc/shared", "lower\n");
  WriteText(deep + "/lower/opaque/old", "x\n");
  WriteText(deep + "/upper/usr/local/bin/tool", "#!/bin/sh\n", 0755);
  WriteText(deep + "/upper/etc/shared", "upper\n");
  WriteText(deep + "/upper/opaque/new", "x\n");
  // The overlay format the store writes: a 0/0 character device hides a lower file, an opaque
  // directory says so in user.overlay.opaque (the mount uses userxattr).
  ASSERT_EQ(::mknod((deep + "/upper/etc/hidden").c_str(), S_IFCHR | 0644, makedev(0, 0)), 0) << std::strerror(errno);
  ASSERT_EQ(::setxattr((deep + "/upper/opaque").c_str(), "user.overlay.opaque", "y", 1, 0), 0) << std::strerror(errno);
  EXPECT_EQ(InUserNamespace({deep + "/lower", deep + "/upper"}, base + "/target", CheckTwoLayers), 0);
  RemoveTree(base);
}

int CheckManyLayers(const std::string& t) {
  struct stat st;
  for (size_t i = 0; i < protocol::kMaxImageLayers; ++i)
    if (::stat((t + "/f" + std::to_string(i)).c_str(), &st) != 0) return 1;
  return 0;
}

TEST(ImageLayers, TheMostLayersWithLongPathsMount) {
  std::string base = MakeTempDir("layers-many");
  std::vector<std::string> layers;
  for (size_t i = 0; i < protocol::kMaxImageLayers; ++i) {
    std::string dir = base + "/sha256-" + std::string(64, static_cast<char>('a' + i % 26)) + std::to_string(i) + "/rootfs";
    ASSERT_EQ(std::system(("mkdir -p '" + dir + "'").c_str()), 0);
    WriteText(dir + "/f" + std::to_string(i), "x");
    layers.push_back(dir);
  }
  ASSERT_EQ(std::system(("chmod -R 0755 '" + base + "'").c_str()), 0);
  ASSERT_EQ(::mkdir((base + "/target").c_str(), 0755), 0);
  EXPECT_EQ(InUserNamespace(layers, base + "/target", CheckManyLayers), 0);
  RemoveTree(base);
}

// ---- commands, environment and cwd in an image root

class ImageCommands : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("image-cmds");
    ASSERT_EQ(std::system(("mkdir -p '" + dir_ + "/usr/local/bin' '" + dir_ + "/usr/bin' && cp /bin/true '" + dir_ +
                           "/usr/local/bin/python3' && cp /bin/true '" + dir_ + "/usr/local/bin/bash' && cp /bin/true '" +
                           dir_ + "/usr/bin/pip'").c_str()),
              0);
    image_path_ = dir_ + "/usr/local/bin:" + dir_ + "/usr/bin";
  }
  void TearDown() override { RemoveTree(dir_); }
  std::string dir_, image_path_;
};

TEST_F(ImageCommands, FindOnPathTakesTheFirstRegularFileAndIgnoresRelativeEntries) {
  EXPECT_EQ(FindOnPath("python3", image_path_), dir_ + "/usr/local/bin/python3");
  EXPECT_EQ(FindOnPath("pip", image_path_), dir_ + "/usr/bin/pip");
  EXPECT_FALSE(FindOnPath("python3", "relative/bin:").has_value());
  EXPECT_FALSE(FindOnPath("../python3", image_path_).has_value());
}

TEST_F(ImageCommands, APathTheImageLacksIsItsCommandOnTheImagesPath) {
  EXPECT_EQ(LocateCommand("/no/such/bin/python3", image_path_), dir_ + "/usr/local/bin/python3");
  EXPECT_EQ(LocateCommand("/bin/true", image_path_), "/bin/true");  // present: itself
  EXPECT_FALSE(LocateCommand("/no/such/bin/python3", "").has_value());  // host and rootfs dirs: never
  EXPECT_EQ(ImagePath({"LANG=C.UTF-8", "PATH=/usr/local/bin:/usr/bin"}), "/usr/local/bin:/usr/bin");
  EXPECT_EQ(ImagePath({"LANG=C.UTF-8"}), "");
}

TEST_F(ImageCommands, AllowlistResolvesAgainstTheImagesPathAndDenyGrows) {
  std::vector<std::string> warnings;
  auto warn = [&](const std::string& w) { warnings.push_back(w); };
  // /no/such/... stands for a policy path the image lacks (/usr/bin/python3 in python:3.12-slim).
  auto p = ExecPolicy::Resolve({"/no/such/bin/python3", "/no/such/bin/bash"}, {"/bin/bash"}, warn, image_path_);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->allowed(), (std::set<std::string>{dir_ + "/usr/local/bin/python3"}));
  EXPECT_TRUE(p->denied().count(dir_ + "/usr/local/bin/bash")) << "a deny entry denies its command on the image's PATH";
  // Without an image PATH (host, rootfs directory) nothing changes: the absent entry is skipped.
  auto host = ExecPolicy::Resolve({"/no/such/bin/python3"}, {}, warn);
  ASSERT_TRUE(host.ok());
  EXPECT_TRUE(host->allowed().empty());
}

TEST(ImageConfig, ImageEnvFillsGapsNeverReplacesAndPassesOnlyWhatARequestCould) {
  std::vector<std::string> warnings;
  auto env = RunEnvironment({{"LANG", "C"}},
                            {"PATH=/usr/local/bin:/usr/bin", "LANG=C.UTF-8", "PYTHON_VERSION=3.12.1", "LD_PRELOAD=/x.so",
                             "PYTHONPATH=/evil", "malformed"},
                            "/work", [&](const std::string& w) { warnings.push_back(w); });
  EXPECT_EQ(env["PATH"], "/usr/local/bin:/usr/bin");
  EXPECT_EQ(env["LANG"], "C");  // the policy's
  EXPECT_EQ(env["PYTHON_VERSION"], "3.12.1");
  EXPECT_EQ(env["HOME"], "/work");
  EXPECT_EQ(env.count("LD_PRELOAD"), 0u);
  EXPECT_EQ(env.count("PYTHONPATH"), 0u);
  EXPECT_EQ(warnings.size(), 2u);
  auto plain = RunEnvironment({{"PATH", "/bin"}}, {"PATH=/usr/local/bin"}, "/tmp", [](const std::string&) {});
  EXPECT_EQ(plain["PATH"], "/bin");  // the policy's PATH wins
  EXPECT_EQ(RunEnvironment({}, {}, "/tmp", [](const std::string&) {})["PATH"], "/usr/local/bin:/usr/bin:/bin");
}

TEST(ImageConfig, ARunAtTheEnvBoundStillGetsPathHomeAndTheImagesVariablesWithinTheirOwnBudget) {
  std::map<std::string, std::string> run_env;
  for (int i = 0; i < 128; ++i) run_env["X_" + std::to_string(i)] = "1";  // a request at its bound
  std::vector<std::string> image_env;
  for (int i = 0; i < 300; ++i) image_env.push_back("IMG_" + std::to_string(i) + "=v");  // a hostile image
  std::vector<std::string> warnings;
  auto env = RunEnvironment(run_env, image_env, "/work", [&](const std::string& w) { warnings.push_back(w); });
  EXPECT_EQ(env.size(), 128u + 128u + 2u);  // the run's, the image's budget, PATH and HOME
  EXPECT_EQ(env["IMG_127"], "v");
  EXPECT_EQ(env.count("IMG_128"), 0u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("IMG_128"), std::string::npos);
}

TEST(ImageConfig, WorkingDirIsTheCwdOnlyWhenItExists) {
  EXPECT_EQ(RunWorkdir("/tmp", "/usr"), "/usr");
  EXPECT_EQ(RunWorkdir("/tmp", "/no/such/dir"), "/tmp");
  EXPECT_EQ(RunWorkdir("/tmp", ""), "/tmp");
  EXPECT_EQ(RunWorkdir("/tmp", "relative"), "/tmp");
}

}  // namespace
}  // namespace lsb::init
