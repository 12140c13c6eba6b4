// container.build: the loader's checks (policy/build_rules.h) and the layer writer's tar
// (image/layer_writer.h) read back by the store's own tar reader.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "image/layer_writer.h"
#include "policy/build_rules.h"
#include "policy_parse_helpers.h"
#include "runtime/build_plan.h"
#include "runtime/backend.h"

namespace lsb {
namespace {

std::string WithBuild(const std::string& build) {
  return "version: \"1.0\"\nname: t\ncontainer:\n  image: python:3.12-slim\n  build:\n" + build;
}

TEST(BuildPolicy, ParsesStepsAndDefaultsTheNetworkToTheIndex) {
  Policy p = MustParse(WithBuild("    pip: [\"pytest>=8\", \"pandas==2.2.*\"]\n"
                                 "    files: {\"/opt/fixtures/\": \"fixtures/\"}\n"
                                 "    run: [\"python -m compileall -q /opt/fixtures\"]\n"));
  EXPECT_EQ(p.build.pip, (std::vector<std::string>{"pytest>=8", "pandas==2.2.*"}));
  ASSERT_EQ(p.build.files.size(), 1u);
  EXPECT_EQ(p.build.files[0].target, "/opt/fixtures/");
  EXPECT_EQ(p.build.files[0].source, "fixtures/");
  EXPECT_EQ(p.build.network_allow, (std::vector<std::string>{"pypi.org", "files.pythonhosted.org"}));
  EXPECT_EQ(p.build.policy_dir, ".");
  EXPECT_EQ(p.build.timeout_ms, 20u * 60 * 1000);
  Policy local = MustParse(WithBuild("    pip: [x]\n    pip_index_url: \"http://127.0.0.1:8080/simple\"\n"));
  EXPECT_EQ(local.build.network_allow, std::vector<std::string>{"127.0.0.1:8080"});
}

// build.disk: 2 GiB unless written; sizes in the policy's units, at least 64 MiB, at most 1 TiB.
TEST(BuildPolicy, DiskBoundHasADefaultAndTakesUnits) {
  EXPECT_EQ(MustParse(WithBuild("    run: [\"true\"]\n")).build.disk_bytes, 2ull << 30);
  EXPECT_EQ(MustParse(WithBuild("    run: [\"true\"]\n    disk: 512M\n")).build.disk_bytes, 512ull << 20);
  EXPECT_EQ(MustParse(WithBuild("    run: [\"true\"]\n    disk: 8G\n")).build.disk_bytes, 8ull << 30);
  EXPECT_NE(ParseError(WithBuild("    run: [\"true\"]\n    disk: 1M\n")).find("container.build.disk: '1M' is not a size of at least 64Mi"),
            std::string::npos);
  EXPECT_NE(ParseError(WithBuild("    run: [\"true\"]\n    disk: 2T\n")).find("at most 1T"), std::string::npos);
  EXPECT_NE(ParseError(WithBuild("    run: [\"true\"]\n    disk: lots\n")).find("container.build.disk"), std::string::npos);
}

// What build.files put into the image is readable to the program (init's Landlock rules), once per
// target, without the trailing '/'; other steps add nothing.
TEST(BuildPolicy, FilesTargetsBecomeReadablePathsOfTheBox) {
  Policy p = MustParse(WithBuild("    files: {\"/opt/fixtures/\": \"fixtures/\", \"/srv/data.txt\": \"d.txt\"}\n"
                                 "    run: [\"mkdir /var/other\"]\n"));
  protocol::BoxSetup s = PolicyBoxSetup(p);
  std::sort(s.readable.begin(), s.readable.end());
  EXPECT_EQ(s.readable, (std::vector<std::string>{"/opt/fixtures", "/srv/data.txt"}));
  EXPECT_TRUE(PolicyBoxSetup(MustParse(WithBuild("    run: [\"true\"]\n"))).readable.empty());
}

// build.apt: the step comes first; the apt_sources archives' hosts join the default network, and
// deb.debian.org stands for the image's own sources; packages and lines are argv, never the script.
TEST(BuildPolicy, AptStepComesFirstWithItsSourcesAndHosts) {
  Policy p = MustParse(WithBuild("    pip: [x]\n    apt: [git, \"libc6:amd64=2.36-9+deb12u4\"]\n"
                                 "    apt_sources: [\"deb [trusted=yes] http://apt.test:8080/ ./\"]\n"));
  EXPECT_EQ(p.build.apt, (std::vector<std::string>{"git", "libc6:amd64=2.36-9+deb12u4"}));
  EXPECT_EQ(p.build.network_allow,
            (std::vector<std::string>{"pypi.org", "files.pythonhosted.org", "apt.test:8080"}));
  auto steps = PlanBuildSteps(p.build);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].kind, "apt");
  EXPECT_EQ(steps[0].description, "apt install git libc6:amd64=2.36-9+deb12u4");
  ASSERT_GE(steps[0].argv.size(), 8u);
  EXPECT_EQ(steps[0].argv[0], "/bin/sh");
  EXPECT_EQ(steps[0].argv[3], "llm-sandbox-apt");
  EXPECT_NE(steps[0].argv[2].find(kAptMissingLine), std::string::npos);  // what StepFailureHint looks for
  EXPECT_EQ(std::vector<std::string>(steps[0].argv.begin() + 4, steps[0].argv.end()),
            (std::vector<std::string>{"1", "deb [trusted=yes] http://apt.test:8080/ ./", "git",
                                      "libc6:amd64=2.36-9+deb12u4"}));
  EXPECT_EQ(steps[1].kind, "pip");
  // Another source is another key; the image's own sources: deb.debian.org by default.
  Policy q = MustParse(WithBuild("    apt: [git]\n"));
  EXPECT_EQ(q.build.network_allow, std::vector<std::string>{"deb.debian.org"});
  auto a = PlanBuildSteps(p.build), b = PlanBuildSteps(q.build);
  EXPECT_NE(BuildStepKey("k", a[0], ""), BuildStepKey("k", b[0], ""));
  EXPECT_NE(BuildSpecMemoKey(p.build), BuildSpecMemoKey(q.build));
  EXPECT_NE(StepFailureHint(b[0], kAptMissingExitCode, kAptMissingLine, "img").find("img has none"), std::string::npos);
  EXPECT_EQ(StepFailureHint(b[0], kAptMissingExitCode, "sh: mktemp: not found", "img"), "");
}

TEST(BuildRules, AptPackagesAndSources) {
  for (const char* ok : {"git", "g++", "libc6:amd64", "curl=7.88.1-10+deb12u5", "python3.11", "a0:arm64=1:2.3~rc1"})
    EXPECT_TRUE(CheckAptPackage(ok).ok()) << ok;
  for (const char* bad : {"", "g", "Git", "-oDebug=1", "git;id", "$(id)", "git id", "git=", "git:", "git=abc",
                          "git=1.0`id`", "git:amd64;x", "git\nx", "../x"})
    EXPECT_FALSE(CheckAptPackage(bad).ok()) << bad;
  auto s = ParseAptSource("deb [trusted=yes arch=amd64] https://Apt.Example:8443/debian bookworm main contrib");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->url.host, "apt.example");
  EXPECT_EQ(s->url.port, 8443);
  for (const char* bad : {"deb-src http://x/ ./", "rpm http://x/ ./", "deb http://x/", "deb ftp://x/ ./",
                          "deb http://x/ ./\ndeb http://y/ ./", "deb [trusted=yes http://x/ ./",
                          "deb http://x/ $(id)", "deb [a=`id`] http://x/ ./", "deb http://u@x/ ./"})
    EXPECT_FALSE(ParseAptSource(bad).ok()) << bad;
  EXPECT_FALSE(ParseAptSource("deb http://x/ " + std::string(1100, 'a')).ok());
}

TEST(BuildPolicy, RefusesOptionsEscapesAptAndAnUnreachableIndex) {
  EXPECT_NE(ParseError(WithBuild("    pip: [\"-r requirements.txt\"]\n")).find("is a pip option"), std::string::npos);
  EXPECT_NE(ParseError(WithBuild("    pip: [\"--index-url=http://evil\"]\n")).find("is a pip option"), std::string::npos);
  EXPECT_NE(ParseError(WithBuild("    files: {\"/opt/x\": \"../secret\"}\n")).find("'..' component"), std::string::npos);
  EXPECT_NE(ParseError(WithBuild("    files: {\"/opt/x\": \"a/../../b\"}\n")).find("'..' component"), std::string::npos);
  EXPECT_NE(ParseError(WithBuild("    files: {\"/opt/x\": \"/etc/passwd\"}\n")).find("is absolute"), std::string::npos);
  EXPECT_NE(ParseError(WithBuild("    files: {\"opt/x\": \"a\"}\n")).find("not an absolute path"), std::string::npos);
  EXPECT_NE(ParseError(WithBuild("    apt: [\"git; rm -rf /\"]\n")).find("is not a Debian package name"),
            std::string::npos);
  EXPECT_NE(ParseError(WithBuild("    apt: [git]\n    apt_sources: [\"deb http://apt.test/ ./\"]\n"
                                 "    network:\n      allow: [\"example.org\"]\n"))
                .find("does not reach the build.apt_sources archive http://apt.test/'s host 'apt.test'"),
            std::string::npos);
  EXPECT_NE(ParseError(WithBuild("    apt_sources: [\"deb http://apt.test/ ./\"]\n")).find("lists no package"),
            std::string::npos);
  EXPECT_NE(ParseError(WithBuild("    pip: [x]\n    network:\n      allow: [\"example.org\"]\n"))
                .find("does not reach build.pip_index_url's host 'pypi.org'"),
            std::string::npos);
  EXPECT_NE(ParseError(WithBuild("    pip: [x]\n    pip_index_url: \"ftp://x/simple\"\n")).find("http or https"),
            std::string::npos);
  EXPECT_NE(ParseError(WithBuild("    pip: [x]\n    pip_index_url: \"https://u:p@x/simple\"\n")).find("user info"),
            std::string::npos);
  EXPECT_NE(ParseError(WithBuild("    timeout: 0s\n")).find("build.timeout"), std::string::npos);
  EXPECT_NE(ParseError(WithBuild("    nope: 1\n")).find("nope"), std::string::npos);
}

TEST(BuildRules, IndexUrls) {
  auto u = ParseIndexUrl("https://PyPI.org/simple");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "pypi.org");
  EXPECT_EQ(u->port, 0);
  auto v = ParseIndexUrl("http://[::1]:8080/simple");
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->host, "::1");
  EXPECT_EQ(v->port, 8080);
  EXPECT_FALSE(ParseIndexUrl("http://x:0/").ok());
  EXPECT_FALSE(ParseIndexUrl("http://x:99999/").ok());
  EXPECT_FALSE(ParseIndexUrl("http:///simple").ok());
}

// A tree with a whiteout-free upper written as a tar: names, a symlink kept as a link (never
// followed), a long name through a pax header, and the digest over exactly the bytes written.
TEST(LayerWriter, WritesTheTreeWithoutFollowingLinks) {
  char tmpl[] = "/tmp/lsb-layer-writer-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  ASSERT_EQ(::mkdir((dir + "/tree").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((dir + "/tree/sub").c_str(), 0700), 0);
  {
    int fd = ::open((dir + "/tree/sub/file.txt").c_str(), O_CREAT | O_WRONLY, 0000);  // unreadable: ours, made readable
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, "hello", 5), 5);
    ::close(fd);
  }
  ASSERT_EQ(::symlink("/etc/shadow", (dir + "/tree/link").c_str()), 0);
  std::string long_name(150, 'n');
  ASSERT_EQ(::close(::open((dir + "/tree/" + long_name).c_str(), O_CREAT | O_WRONLY, 0644)), 0);
  int tree = ::open((dir + "/tree").c_str(), O_RDONLY | O_DIRECTORY);
  int out = ::open((dir + "/layer.tar").c_str(), O_CREAT | O_WRONLY, 0644);
  image::LayerTarWriter w(out, image::LayerWriteLimits{});
  ASSERT_TRUE(w.AddTree(tree, "", /*overlay_upper=*/true, /*refuse_symlinks=*/false).ok());
  auto diff = w.Finish();
  ASSERT_TRUE(diff.ok());
  ::close(out);
  image::LayerTarWriter refuse(::open("/dev/null", O_WRONLY), image::LayerWriteLimits{});
  auto refused = refuse.AddTree(tree, "x", false, /*refuse_symlinks=*/true);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("'x/link' is a symbolic link"), std::string::npos);
  ::close(tree);
  std::string listing;
  FILE* p = ::popen(("tar -tvf " + dir + "/layer.tar").c_str(), "r");
  char buf[4096];
  while (p && std::fgets(buf, sizeof buf, p)) listing += buf;
  if (p) ::pclose(p);
  EXPECT_NE(listing.find("link -> /etc/shadow"), std::string::npos) << listing;
  EXPECT_NE(listing.find("sub/file.txt"), std::string::npos) << listing;
  EXPECT_NE(listing.find(long_name), std::string::npos) << listing;
  FILE* s = ::popen(("sha256sum " + dir + "/layer.tar").c_str(), "r");
  ASSERT_NE(std::fgets(buf, sizeof buf, s), nullptr);
  ::pclose(s);
  EXPECT_EQ(diff->substr(7), std::string(buf, 64));
  image::LayerTarWriter small(::open("/dev/null", O_WRONLY), image::LayerWriteLimits{2, 1 << 20});
  int again = ::open((dir + "/tree").c_str(), O_RDONLY | O_DIRECTORY);
  EXPECT_FALSE(small.AddTree(again, "", true, false).ok());
  ::close(again);
  (void)std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace lsb

namespace lsb {
namespace {

// The environment report is the image's own output: only [string, string] entries are kept.
TEST(EnvironmentReport, NameVersionListsKeepOnlyPairsOfStrings) {
  auto list = nlohmann::json::parse(R"([["numpy", "1.24.2"], ["x"], [1, "2"], "y", ["a", "b", "c"], ["git", "1:2.39"]])");
  EXPECT_EQ(ReadNameVersions(list), (NameVersions{{"numpy", "1.24.2"}, {"git", "1:2.39"}}));
  EXPECT_TRUE(ReadNameVersions(nlohmann::json::object()).empty());
  EXPECT_TRUE(ReadNameVersions(nlohmann::json("not a list")).empty());
  EXPECT_EQ(NameVersionObjects({{"git", "1:2.39"}}).dump(), R"([{"name":"git","version":"1:2.39"}])");
}

}  // namespace
}  // namespace lsb
