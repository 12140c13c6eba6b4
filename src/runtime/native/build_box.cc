#include "runtime/native/build_box.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/io.h"
#include "base/random_id.h"
#include "egress/egress_proxy.h"
#include "egress/egress_rules.h"
#include "runtime/native/box_cgroup.h"
#include "runtime/native/box_user_limits.h"
#include "runtime/native/build_disk.h"
#include "runtime/native/copy_up.h"
#include "runtime/native/idmap.h"
#include "runtime/native/init_binary.h"
#include "runtime/native/launcher.h"

namespace lsb::native {
namespace {

bool Privileged() { return ::geteuid() == 0; }

Status MakeOwnedDir(const std::string& path, uid_t uid, gid_t gid) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return Error::FromErrno("mkdir " + path);
  if (Privileged() && ::chown(path.c_str(), uid, gid) != 0) return Error::FromErrno("chown " + path);
  return OkStatus();
}

// As root, the box's root is host uid 100000 and the layers' files belong to the store's owner
// (host root, unmapped in the box): the image would be read-only to the build. Every directory of
// the layers is made in the upper directory first, owned by the box's root with the layer's mode,
// so overlayfs shows them as the box's own and a step can create, replace and remove files
// anywhere (writing into a file of the image in place still fails: docs/policy.md).
Status MirrorDirs(int from, int to, uid_t uid, gid_t gid, int depth) {
  if (depth > 256) return OkStatus();
  int dup = ::openat(from, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dup < 0) return Error::FromErrno("open a layer directory");
  DIR* d = ::fdopendir(dup);
  if (!d) {
    ::close(dup);
    return Error::FromErrno("fdopendir");
  }
  std::vector<std::pair<std::string, mode_t>> dirs;
  while (dirent* e = ::readdir(d)) {
    if (!std::strcmp(e->d_name, ".") || !std::strcmp(e->d_name, "..")) continue;
    struct stat st {};
    if (::fstatat(from, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
      dirs.emplace_back(e->d_name, st.st_mode & 0755);
  }
  ::closedir(d);
  for (const auto& [name, mode] : dirs) {
    if (::mkdirat(to, name.c_str(), mode | 0700) == 0) {
      if (::fchownat(to, name.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) != 0) return Error::FromErrno("chown " + name);
    } else if (errno != EEXIST) {
      return Error::FromErrno("mkdir " + name);
    }
    UniqueFd sub_from(::openat(from, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    UniqueFd sub_to(::openat(to, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub_from || !sub_to) continue;  // a name the upper has as a non-directory: left alone
    LSB_TRY(MirrorDirs(sub_from.get(), sub_to.get(), uid, gid, depth + 1));
  }
  return OkStatus();
}

// The step runner, named as such when missing (OpenInitBinary's message names init).
Result<InitBinary> OpenBuildStepBinary() {
  std::string tried;
  for (const std::string& path : BuildStepCandidates()) {
    auto found = OpenInitBinary(path);
    if (found.ok()) return found;
    const std::string& m = found.error().message;
    size_t at = m.find(path + ": ");  // "  <path>: <why>" in the candidates it lists
    tried += "\n  " + (at == std::string::npos ? path : m.substr(at, m.find('\n', at) - at));
  }
  return Error{ErrorCode::kNotFound,
               "cannot find llm-sandbox-build-step (the runner of container.build's steps); tried:" + tried +
                   "\nfix: build it (cmake --build build --target llm-sandbox-build-step), install it beside "
                   "llm-sandbox or to /usr/local/libexec/llm-sandbox/, or set LLM_SANDBOX_BUILD_STEP=/path/to/it"};
}

}  // namespace

std::vector<std::string> BuildStepCandidates() {
  // An explicit setting is the only candidate: a wrong one must not fall back to another binary.
  if (const char* e = std::getenv("LLM_SANDBOX_BUILD_STEP"); e && *e) return {e};
  std::vector<std::string> out;
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    std::string dir(self, static_cast<size_t>(n));
    out.push_back(dir.substr(0, dir.rfind('/')) + "/llm-sandbox-build-step");
  }
  out.emplace_back("/usr/local/libexec/llm-sandbox/llm-sandbox-build-step");
  return out;
}

namespace {

// The step's upper and work directories on a filesystem of build.disk bytes, owned by the box's
// root; as root, the layers' directories and the step's writable files copied up first.
Status PrepareUpper(const BuildStepRequest& req, uid_t root_uid, gid_t root_gid, BuildStepOutcome* out) {
  auto disk = BuildDisk::Create(req.dir, req.disk_bytes, root_uid, root_gid);
  if (!disk.ok()) return disk.error().Wrap("container.build: the step's upper layer (build.disk)");
  out->disk = std::move(disk).value();
  out->upper = out->disk->root() + "/upper";
  // The box's root (a mapped uid) walks into the step's directory: searchable, not writable.
  if (::chmod(req.dir.c_str(), 0755) != 0) return Error::FromErrno("chmod " + req.dir);
  LSB_TRY(MakeOwnedDir(out->upper, root_uid, root_gid));
  LSB_TRY(MakeOwnedDir(out->disk->root() + "/work", root_uid, root_gid));
  LSB_TRY(MakeOwnedDir(req.dir + "/merged", root_uid, root_gid));
  if (!Privileged()) return OkStatus();
  UniqueFd upper(::open(out->upper.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!upper) return Error::FromErrno("open " + out->upper);
  for (auto it = req.lowers.rbegin(); it != req.lowers.rend(); ++it) {  // the topmost layer's modes win
    UniqueFd lower(::open(it->c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!lower) return Error::FromErrno("open layer " + *it);
    LSB_TRY(MirrorDirs(lower.get(), upper.get(), root_uid, root_gid, 0));
  }
  for (const std::string& rel : req.writable)
    LSB_TRY(CopyUpFromLayers(req.lowers, upper.get(), rel, root_uid, root_gid));
  return OkStatus();
}

// The step's output and the runner's diagnostics until the stream ends, the deadline passes or the
// output is over its bound.
Status ReadStep(int stream, int diag, const BuildStepRequest& req, BuildStepOutcome* out) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(req.timeout_ms);
  char buf[65536];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      out->timed_out = true;
      return OkStatus();
    }
    struct pollfd p[2] = {{stream, POLLIN, 0}, {diag, POLLIN, 0}};
    int r = ::poll(p, 2, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (r < 0 && errno != EINTR) return Error::FromErrno("poll the build box");
    if (p[1].revents & POLLIN) {
      ssize_t n = ::read(diag, buf, sizeof buf);
      if (n > 0 && out->diagnostics.size() < 65536) out->diagnostics.append(buf, static_cast<size_t>(n));
    }
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = ::read(stream, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return OkStatus();
      if (out->output.size() + static_cast<size_t>(n) > req.output_bytes) {
        out->output.append(buf, req.output_bytes - out->output.size());
        out->output_exceeded = true;
        return OkStatus();
      }
      out->output.append(buf, static_cast<size_t>(n));
    }
  }
}

}  // namespace

Result<BuildStepOutcome> RunBuildStep(const BuildStepRequest& req, const CgroupLayout& layout) {
  LSB_ASSIGN_OR_RETURN(InitBinary runner, OpenBuildStepBinary());
  IdMapPlan idmap = PlanIdMap(Privileged(), ::geteuid(), ::getegid(), req.id_base);
  // Root inside is this host id: the upper layer must be its to write.
  const uid_t root_uid = Privileged() ? req.id_base : ::geteuid();
  const gid_t root_gid = Privileged() ? req.id_base : ::getegid();
  BuildStepOutcome out;
  LSB_TRY(PrepareUpper(req, root_uid, root_gid, &out));

  nlohmann::json spec{{"merged", req.dir + "/merged"}, {"upper", out.upper},       {"work", out.disk->root() + "/work"},
                      {"lowers", req.lowers},          {"argv", req.argv},         {"env", req.env},
                      {"workdir", req.workdir},        {"tmp_size", std::to_string(req.memory_bytes ? req.memory_bytes : (1ull << 30))}};
  LaunchOptions lo;
  lo.init_fd = runner.fd.get();
  lo.new_net = true;
  lo.egress_listener = true;
  lo.idmap = idmap;
  lo.user_limits = DefaultBoxUserLimits();
  lo.first_frames = spec.dump() + "\n";
  const std::string id = RandomHex("build-", 6);
  std::unique_ptr<BoxCgroups> cgroups;
  CgroupLimits limits;
  limits.memory_bytes = req.memory_bytes;
  limits.pids = 1024;
  lo.prepare = [&](pid_t pid) -> Result<std::vector<UniqueFd>> {
    auto cg = BoxCgroups::Create(layout, req.cgroup_parent, id, limits);
    if (!cg.ok()) return cg.error();
    cgroups = std::move(*cg);
    LSB_TRY(cgroups->AddProcess(pid, /*skip_v1=*/true));
    return cgroups->SelfAttachFiles();
  };
  auto launched = LaunchInit(lo);
  if (!launched.ok()) return launched.error().Wrap("start the build box (" + runner.path + ")");
  LSB_ASSIGN_OR_RETURN(egress::EgressRules rules, egress::EgressRules::Parse(req.allow, req.deny));
  auto proxy = egress::EgressProxy::Create(std::move(launched->egress_listener), std::move(rules), req.egress);
  if (!proxy.ok()) return proxy.error().Wrap("start the build's egress proxy");
  (*proxy)->BeginRun();

  const int diag = launched->diagnostics.get();
  Status read = ReadStep(launched->stream.get(), diag, req, &out);
  if (!read.ok() || out.timed_out || out.output_exceeded) launched->process->Kill();
  int status = launched->process->Reap();
  (*proxy)->Stop();
  char buf[65536];
  for (;;) {  // what the runner said on its way out
    ssize_t n = ::read(diag, buf, sizeof buf);
    if (n <= 0 || out.diagnostics.size() >= 65536) break;
    out.diagnostics.append(buf, static_cast<size_t>(n));
  }
  if (cgroups) (void)cgroups->Destroy();
  if (!read.ok()) return read.error();
  if (WIFEXITED(status)) out.exit_code = WEXITSTATUS(status);
  else out.exit_code = 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  out.disk_full = out.exit_code != 0 && out.disk->Full();
  return out;
}

}  // namespace lsb::native
