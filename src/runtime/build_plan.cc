#include "runtime/build_plan.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "base/sha256.h"
#include "base/unique_fd.h"
#include "image/layer_writer.h"
#include "policy/build_rules.h"

namespace lsb {
namespace {

std::string JoinWords(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
  return out;
}

// The apt step, run as `sh -c SCRIPT llm-sandbox-apt N SOURCE_1..SOURCE_N PACKAGE...`: every
// line and package is an argument ("$@"), never part of the script. apt's privilege drop to _apt
// is turned off (the build box's root is uid 0 of a user namespace: there may be no _apt to become,
// and the box is the sandbox); the proxy variables are given to apt's own option too. Lists and
// caches are removed so that the layer holds the packages only.
constexpr const char* kAptScript = R"(set -eu
export DEBIAN_FRONTEND=noninteractive DEBCONF_NONINTERACTIVE_SEEN=true LC_ALL=C
if ! command -v apt-get >/dev/null 2>&1; then
  echo "llm-sandbox: build.apt needs apt-get in the image; it has none" >&2
  exit 127
fi
n=$1; shift
o="-o APT::Sandbox::User=root -o Dpkg::Use-Pty=0 -o Acquire::Retries=1 -o APT::Install-Recommends=false"
if [ -n "${http_proxy:-}" ]; then o="$o -o Acquire::http::Proxy=$http_proxy"; fi
if [ -n "${https_proxy:-}" ]; then o="$o -o Acquire::https::Proxy=$https_proxy"; fi
if [ "$n" -gt 0 ]; then
  d=$(mktemp -d /tmp/llm-sandbox-apt.XXXXXX)
  mkdir "$d/parts"
  : > "$d/sources.list"
  while [ "$n" -gt 0 ]; do printf '%s\n' "$1" >> "$d/sources.list"; shift; n=$((n - 1)); done
  o="$o -o Dir::Etc::SourceList=$d/sources.list -o Dir::Etc::SourceParts=$d/parts"
fi
apt-get $o update
apt-get $o install -y --no-install-recommends -- "$@"
apt-get $o clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/partial /var/log/apt/eipp.log.xz
)";

// Python's view of its distributions, and dpkg's status file for the apt packages asked for.
constexpr const char* kReportScript = R"(import sys, json, importlib.metadata as m
apt = {}
try:
    for block in open('/var/lib/dpkg/status', encoding='utf-8', errors='replace').read().split('\n\n'):
        f = dict(l.split(': ', 1) for l in block.splitlines() if ': ' in l and not l.startswith(' '))
        if f.get('Status', '').endswith(' installed'):
            apt[f.get('Package', '')] = f.get('Version', '?')
except OSError:
    pass
names = [a.split('=')[0].split(':')[0] for a in sys.argv[1:]]
print(json.dumps({'python': sys.version.split()[0],
                  'packages': sorted({(d.metadata['Name'] or '?', d.version or '?') for d in m.distributions()}),
                  'apt': [[n, apt[n]] for n in names if n in apt]}))
)";

}  // namespace

std::vector<BuildStep> PlanBuildSteps(const BuildSpec& b) {
  std::vector<BuildStep> steps;
  if (!b.apt.empty()) {
    BuildStep s{"apt", "apt install " + JoinWords(b.apt), {"/bin/sh", "-c", kAptScript, "llm-sandbox-apt"}, nullptr};
    s.argv.push_back(std::to_string(b.apt_sources.size()));
    s.argv.insert(s.argv.end(), b.apt_sources.begin(), b.apt_sources.end());
    s.argv.insert(s.argv.end(), b.apt.begin(), b.apt.end());
    // dpkg opens its locks read-write and links its status files to *-old before replacing them;
    // debconf opens its databases read-write to lock them.
    s.writable = {"var/lib/dpkg/lock", "var/lib/dpkg/lock-frontend", "var/lib/dpkg/status", "var/lib/dpkg/diversions",
                  "var/lib/dpkg/statoverride", "var/lib/dpkg/triggers/Lock", "var/lib/dpkg/triggers/File",
                  "var/lib/dpkg/triggers/Unincorp", "var/lib/apt/extended_states", "var/log/dpkg.log",
                  "var/log/alternatives.log", "var/log/apt/history.log", "var/log/apt/term.log",
                  "var/cache/debconf/config.dat", "var/cache/debconf/passwords.dat", "var/cache/debconf/templates.dat"};
    steps.push_back(std::move(s));
  }
  if (!b.pip.empty()) {
    BuildStep s{"pip", "pip install " + JoinWords(b.pip), {}, nullptr};
    s.argv = {"python3", "-m", "pip", "install", "--no-cache-dir", "--disable-pip-version-check", "--no-input",
              "--root-user-action=ignore", "--break-system-packages", "--index-url", b.pip_index_url};
    if (auto url = ParseIndexUrl(b.pip_index_url); url.ok() && url->scheme == "http")
      s.argv.insert(s.argv.end(), {"--trusted-host", url->host});
    s.argv.push_back("--");
    s.argv.insert(s.argv.end(), b.pip.begin(), b.pip.end());
    steps.push_back(std::move(s));
  }
  for (const BuildFile& f : b.files) steps.push_back(BuildStep{"files", "files " + f.source + " -> " + f.target, {}, &f});
  for (const std::string& r : b.run) steps.push_back(BuildStep{"run", "run " + r, {"/bin/sh", "-c", r}, nullptr});
  return steps;
}

std::string StepFailureHint(const BuildStep& s, int exit_code, const std::string& output, const std::string& image) {
  if (s.kind == "apt" && exit_code == kAptMissingExitCode && output.find(kAptMissingLine) != std::string::npos)
    return " (build.apt needs apt-get in the image; " + image + " has none: use a Debian or Ubuntu based image, "
           "or install with build.pip)";
  return "";
}

std::string BuildSpecMemoKey(const BuildSpec& b) {
  return nlohmann::json{{"apt", b.apt}, {"apt_sources", b.apt_sources}, {"pip", b.pip}, {"index", b.pip_index_url},
                        {"run", b.run}}
      .dump();
}

std::vector<std::string> EnvironmentReportArgv(const std::vector<std::string>& apt) {
  std::vector<std::string> argv = {"python3", "-B", "-c", kReportScript};
  argv.insert(argv.end(), apt.begin(), apt.end());
  return argv;
}

NameVersions ReadNameVersions(const nlohmann::json& list) {
  NameVersions out;
  if (!list.is_array()) return out;
  for (const auto& p : list)
    if (p.is_array() && p.size() == 2 && p[0].is_string() && p[1].is_string())
      out.emplace_back(p[0].get<std::string>(), p[1].get<std::string>());
  return out;
}

nlohmann::json NameVersionObjects(const NameVersions& pairs) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [name, version] : pairs) out.push_back({{"name", name}, {"version", version}});
  return out;
}

std::string BuildStepLabel(size_t index, size_t count, const BuildStep& s) {
  return "step " + std::to_string(index + 1) + "/" + std::to_string(count) + " (" + s.description + ")";
}

std::string BuildBaseKey(const std::string& scheme, const std::string& base_id) {
  // The native scheme ("") keeps the keys of the stores built before there were two.
  return Hex(Sha256("llm-sandbox build v1\n" + (scheme.empty() ? "" : scheme + "\n") + base_id));
}

std::string BuildStepKey(const std::string& previous, const BuildStep& s, const std::string& content) {
  nlohmann::json j{{"kind", s.kind}, {"argv", s.argv}};
  if (s.file) {
    j["target"] = s.file->target;
    j["content"] = content;
  }
  return Hex(Sha256(previous + "\n" + j.dump()));
}

Status WriteFilesLayer(const BuildFile& f, const std::string& policy_dir, int out_fd, std::string* diff_id) {
  UniqueFd dir(::open(policy_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return Error::FromErrno("open the policy's directory " + policy_dir);
  std::string src = f.source;
  if (src.size() > 1 && src.back() == '/') src.pop_back();
  struct open_how how {};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  int fd = static_cast<int>(::syscall(SYS_openat2, dir.get(), src.c_str(), &how, sizeof how));
  if (fd < 0)
    return Error::FromErrno("container.build.files: '" + f.source + "' (below " + policy_dir +
                            "; sources may not be or pass through a symbolic link)");
  UniqueFd path(fd);
  struct stat st {};
  if (::fstat(path.get(), &st) != 0) return Error::FromErrno("stat " + f.source);
  image::LayerTarWriter w(out_fd, image::LayerWriteLimits{});
  std::string target = f.target.substr(1);
  bool into = !target.empty() && target.back() == '/';
  if (into) target.pop_back();
  // The parent directories of the target, as directories.
  for (size_t p = target.find('/'); p != std::string::npos; p = target.find('/', p + 1))
    LSB_TRY(w.AddDir(target.substr(0, p), 0755, 0));
  if (S_ISDIR(st.st_mode)) {
    UniqueFd d(::openat(path.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!d) return Error::FromErrno("open " + f.source);
    LSB_TRY(w.AddDir(target, st.st_mode, st.st_mtime));
    LSB_TRY(w.AddTree(d.get(), target, /*overlay_upper=*/false, /*refuse_symlinks=*/true));
  } else if (S_ISREG(st.st_mode)) {
    UniqueFd r(::openat(path.get(), ".", O_RDONLY | O_CLOEXEC));
    if (!r) r = UniqueFd(::open(("/proc/self/fd/" + std::to_string(path.get())).c_str(), O_RDONLY | O_CLOEXEC));
    if (!r) return Error::FromErrno("open " + f.source);
    if (into) {
      LSB_TRY(w.AddDir(target, 0755, 0));
      target += "/" + src.substr(src.rfind('/') + 1);
    }
    LSB_TRY(w.AddFile(target, r.get(), st.st_mode, st.st_mtime, static_cast<uint64_t>(st.st_size)));
  } else {
    return Error{"container.build.files: '" + f.source + "' is not a regular file or directory"};
  }
  LSB_ASSIGN_OR_RETURN(*diff_id, w.Finish());
  return OkStatus();
}

std::string OutputTail(const std::string& s, size_t n) { return s.size() <= n ? s : "..." + s.substr(s.size() - n); }

}  // namespace lsb
