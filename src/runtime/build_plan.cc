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
#include "inbox/inbox_sources.h"
#include "policy/build_rules.h"

namespace lsb {
namespace {

std::string JoinWords(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
  return out;
}

}  // namespace

std::vector<BuildStep> PlanBuildSteps(const BuildSpec& b) {
  std::vector<BuildStep> steps;
  if (!b.apt.empty()) {
    // src/inbox/apt_install.sh: every line and package is an argument ("$@"), never part of the script.
    BuildStep s{"apt", "apt install " + JoinWords(b.apt),
                {"/bin/sh", "-c", std::string(inbox::AptInstallSource()), "llm-sandbox-apt"}, nullptr};
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
  // src/inbox/build_report.py: python's view of its distributions, dpkg's of the apt packages.
  std::vector<std::string> argv = {"python3", "-B", "-c", std::string(inbox::BuildReportSource())};
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
