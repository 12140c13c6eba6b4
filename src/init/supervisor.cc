#include "init/supervisor.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/io.h"
#include "base/unique_fd.h"
#include "init/command_path.h"
#include "init/diag.h"
#include "init/egress_env.h"
#include "init/idle_memory.h"
#include "init/font_cache.h"
#include "init/image_config.h"
#include "init/spawn.h"
#include "policy/env_rules.h"

namespace lsb::init {

using protocol::ErrorStage;
using protocol::ExitReport;
using protocol::FrameType;
using protocol::RunSpec;

namespace {

std::string Substitute(std::string s, const std::string& file) {
  for (size_t at = s.find("{file}"); at != std::string::npos; at = s.find("{file}", at + file.size()))
    s.replace(at, 6, file);
  return s;
}

}  // namespace

Status Supervisor::Serve() {
  for (;;) {
    if (stream_.QuietFor(kIdleAfterMs)) ReleaseIdleMemory();
    auto f = stream_.Read();
    if (!f.ok()) {
      if (f.error().IsEof()) return OkStatus();
      return f.error();
    }
    switch (f->type) {
      case FrameType::kRun: {
        RunSpec spec;
        try {
          spec = protocol::ParseMessage<RunSpec>(f->payload);
        } catch (const std::exception& e) {
          LSB_TRY(stream_.SendJson(FrameType::kError, protocol::InitError{ErrorStage::kProtocol, std::string("bad RunSpec: ") + e.what(), 0}));
          break;
        }
        auto code = stream_.Read();
        if (!code.ok()) return code.error().IsEof() ? OkStatus() : code.error();
        if (code->type != FrameType::kCode) {
          LSB_TRY(stream_.SendJson(FrameType::kError, protocol::InitError{ErrorStage::kProtocol, "kRun must be followed by kCode", 0}));
          break;
        }
        bool shutdown = false;
        auto st = Run(spec, code->payload, &shutdown);
        if (!st.ok()) {
          if (st.error().IsEof()) return OkStatus();
          LSB_TRY(stream_.SendJson(FrameType::kError, protocol::InitError{ErrorStage::kRun, st.error().message, st.error().sys_errno}));
        }
        if (shutdown) return OkStatus();
        break;
      }
      case FrameType::kFileOp: {
        LSB_ASSIGN_OR_RETURN(WorkerIdentity who, FileWorkerIdentity());
        auto st = ServeFileOp(stream_, f->payload, who);
        if (!st.ok()) return st.error().IsEof() ? OkStatus() : st;
        break;
      }
      case FrameType::kWatch:
      case FrameType::kUnwatch: {
        LSB_ASSIGN_OR_RETURN(WorkerIdentity who, FileWorkerIdentity());
        ServeWatchFrame(file_watch_, *f, who);
        break;
      }
      case FrameType::kShutdown:
        return OkStatus();
      case FrameType::kKill:
      case FrameType::kPreempt:
      case FrameType::kStdin:
      case FrameType::kStdinEof:
        break;  // late frames for a run that already ended
      default:
        LSB_TRY(stream_.SendJson(FrameType::kError, protocol::InitError{ErrorStage::kProtocol, std::string("unexpected frame ") + protocol::FrameTypeName(f->type), 0}));
    }
  }
}

Status Supervisor::WriteProgram(const RunSpec& spec, const std::string& code) {
  const std::string& n = spec.file_name;
  if (n.empty() || n == "." || n == ".." || n.find('/') != std::string::npos || n.find('\0') != std::string::npos)
    return Error{"file_name must be a plain file name: \"" + n + "\""};
  if (DIR* d = ::opendir(setup_.job_dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string old = e->d_name;
      if (old != "." && old != "..") ::unlink((setup_.job_dir + "/" + old).c_str());
    }
    ::closedir(d);
  }
  if (n == kFontCacheDirName) return Error{"file_name \"" + n + "\" is the box's font cache; choose another name"};
  if (!setup_.egress_ca_pem.empty()) {
    if (n == kEgressCaFileName) return Error{"file_name \"" + n + "\" is the box's CA bundle; choose another name"};
    const std::string ca = setup_.job_dir + "/" + kEgressCaFileName;
    UniqueFd cfd(::open(ca.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444));
    if (!cfd) return Error::FromErrno("write the box's CA bundle to " + ca);
    LSB_TRY(WriteAll(cfd.get(), EgressCaBundle(setup_.egress_ca_pem)));
  }
  std::string path = setup_.job_dir + "/" + n;
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444));
  if (!fd) return Error::FromErrno("write the program to " + path);
  return WriteAll(fd.get(), code);
}

Result<const SeccompPrograms*> Supervisor::ProgramsFor(uint64_t nofile) {
  auto& slot = programs_[nofile];
  if (!slot) {
    // Trace mode adds file opens to the watch; without the watch, escape calls stay plain EPERM.
    LSB_ASSIGN_OR_RETURN(SeccompPrograms p, BuildSeccompPrograms(static_cast<int>(nofile), SeccompOptions{setup_.trace, watch_}));
    slot = std::make_unique<SeccompPrograms>(std::move(p));
  }
  return slot.get();
}

Result<WorkerIdentity> Supervisor::FileWorkerIdentity() {
  WorkerIdentity who{setup_.uid, setup_.gid, ruleset_fd_, nullptr};
  if (escape_) {
    LSB_ASSIGN_OR_RETURN(const SeccompPrograms* progs, ProgramsFor(protocol::RunSpec{}.nofile));
    who.escape = &progs->escape;
  }
  return who;
}

Result<SpawnParams> Supervisor::SpawnParamsFor(const RunSpec& spec, uint64_t nofile,
                                               const SeccompPrograms* programs) const {
  const std::string file = setup_.job_dir + "/" + spec.file_name;
  SpawnParams p;
  for (const auto& a : spec.argv) p.argv.push_back(Substitute(a, file));
  const std::string workdir = RunWorkdir(spec.workdir, setup_.image_workdir);
  std::map<std::string, std::string> env =
      RunEnvironment(spec.env, setup_.image_env, workdir, [](const std::string& w) { Diag(w); });
  AddEgressProxyEnv(env, setup_.egress_proxy);
  AddFontCacheEnv(env, setup_);
  if (!setup_.egress_ca_pem.empty()) AddEgressCaEnv(env, setup_.job_dir + "/" + kEgressCaFileName);
  for (const auto& [k, v] : env) p.env.push_back(k + "=" + v);
  // A bare name on the run's PATH; a path the image lacks by its name on the image's PATH, as
  // the allowlist was resolved (command_path.h), and argv[0] says where it runs from.
  if (p.argv[0].find('/') == std::string::npos) {
    p.path = FindOnPath(p.argv[0], env["PATH"]).value_or(p.argv[0]);
  } else {
    p.path = LocateCommand(p.argv[0], ImagePath(setup_.image_env)).value_or(p.argv[0]);
    p.argv[0] = p.path;
  }
  p.workdir = workdir;
  p.nofile = nofile;
  p.file_size = spec.file_size_bytes;
  p.uid = setup_.uid;
  p.gid = setup_.gid;
  p.stdin_pipe = spec.stdin_follows;
  p.ruleset_fd = ruleset_fd_;
  p.seccomp = programs;
  p.watch = watch_;
  p.escape = escape_;
  return p;
}

Result<Spawned> Supervisor::Start(const SpawnParams& p) {
  if (setup_.fork == "zygote") {
    if (zygote_started_) return Error{"a fork server's zygote box runs its interpreter once"};
    zygote_started_ = true;
    SpawnParams z = p;
    z.zygote_fds = setup_.fork_fds;
    LSB_ASSIGN_OR_RETURN(zygote_filter_, CompileZygoteFilter());
    z.zygote_filter = &zygote_filter_;
    return SpawnZygote(z);
  }
  if (!adoptee_) return Spawn(p);
  Adoptee a = std::move(*adoptee_);
  adoptee_.reset();
  std::string why = WhyNotAdoptable(p, a.pid);
  if (why.empty()) return Adopt(std::move(a), p);
  Diag("fork server: a new program for this run: " + why);
  // Not what the waiting copy can become: it exits at the end of its socket; a new one runs.
  const pid_t pid = a.pid;
  a.sock.reset();
  int status;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return Spawn(p);
}

Status Supervisor::Run(const RunSpec& spec, const std::string& code, bool* shutdown) {
  if (spec.argv.empty()) return Error{"RunSpec.argv is empty"};
  // The host checked every source of this environment; checked again here, where it is used.
  LSB_TRY(env::CheckRunEnv(spec.env));
  LSB_TRY(WriteProgram(spec, code));
  LSB_ASSIGN_OR_RETURN(uint64_t nofile, CheckNofile(spec.nofile));
  LSB_ASSIGN_OR_RETURN(const SeccompPrograms* progs, ProgramsFor(nofile));
  LSB_ASSIGN_OR_RETURN(SpawnParams p, SpawnParamsFor(spec, nofile, progs));

  rusage before{};
  ::getrusage(RUSAGE_CHILDREN, &before);
  const uint64_t start = MonotonicMs();
  LSB_ASSIGN_OR_RETURN(Spawned child, Start(p));
  LSB_ASSIGN_OR_RETURN(WorkerIdentity who, FileWorkerIdentity());
  RunLoop loop(stream_, sigfd_, spec, std::move(child), WatchConfig{&exec_, setup_.network_enabled, setup_.trace, setup_.egress_proxy},
               p.path, start, before);
  loop.ServeFilesAs(who, &file_watch_);
  LSB_ASSIGN_OR_RETURN(ExitReport report, loop.Run(shutdown));
  file_watch_.Revive(who);  // the run's end killed every process of the box, the watcher too
  return stream_.SendJson(FrameType::kExit, report);
}

}  // namespace lsb::init
