#include "runtime/docker/docker_builder.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "base/io.h"
#include "base/random_id.h"
#include "egress/box_egress.h"
#include "image/store_lock.h"
#include "policy/tmpfs_options.h"
#include "protocol/messages.h"
#include "runtime/build_plan.h"
#include "runtime/docker/connection.h"
#include "runtime/docker/container_spec.h"
#include "runtime/docker/egress_attach.h"
#include "runtime/docker/stream_demux.h"

namespace lsb::docker {
namespace {

using Clock = std::chrono::steady_clock;

// The step waits for "go" on stdin (sent once its egress proxy listens), then runs with the
// proxy's variables; they live in this script, not in the container's Env, so the committed
// image never carries them.
std::string GateScript() {
  const std::string proxy = std::string("http://") + protocol::kEgressProxyAddress;
  std::string s = "IFS= read -r go || exit 125; [ \"$go\" = go ] || exit 125; export HOME=/root NO_PROXY= no_proxy=";
  for (const char* v : {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"})
    s += std::string(" ") + v + "=" + proxy;
  return s + "; exec \"$@\"";
}

// Removes the build's container on every way out.
struct ContainerGuard {
  const EngineClient& engine;
  std::string id;
  ~ContainerGuard() {
    if (!id.empty()) (void)engine.RemoveContainer(id, /*force=*/true);
  }
};

// The lock directory of this host's builds: root's /run/llm-sandbox, else the user's runtime dir.
Result<std::string> LockDir() {
  std::string dir;
  if (::geteuid() == 0) {
    dir = "/run/llm-sandbox";
  } else if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x && *x == '/') {
    dir = std::string(x) + "/llm-sandbox";
  } else {
    dir = "/tmp/llm-sandbox-" + std::to_string(::geteuid());
  }
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return Error::FromErrno("mkdir " + dir);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return Error::FromErrno("stat " + dir);
  // Someone else's directory (or a symlink planted in /tmp) is never used for our locks.
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 022))
    return Error{dir + " is not a directory of this user's alone; remove it"};
  return dir;
}

Json CommitConfig(const Json& parent_config, const Policy& policy, const std::string& key, const std::string& step,
                  const std::string& base) {
  Json c = Json::object();
  // The base's command survives the build container's gate script ([] reads as "none").
  c["Entrypoint"] = parent_config.contains("Entrypoint") && parent_config["Entrypoint"].is_array()
                        ? parent_config["Entrypoint"]
                        : Json::array();
  if (parent_config.contains("Cmd") && parent_config["Cmd"].is_array()) c["Cmd"] = parent_config["Cmd"];
  for (const char* k : {"User", "WorkingDir"})
    if (parent_config.contains(k) && parent_config[k].is_string() && !parent_config[k].get<std::string>().empty())
      c[k] = parent_config[k];
  Json labels = parent_config.contains("Labels") && parent_config["Labels"].is_object() ? parent_config["Labels"]
                                                                                       : Json::object();
  labels[kLabelBuild] = "1";
  labels[kLabelBuildKey] = key;
  labels[kLabelBuildStep] = step.substr(0, 1024);
  labels[kLabelBuildBase] = base;
  labels[kLabelPolicy] = policy.name;
  c["Labels"] = labels;
  return c;
}

// What a step printed (stdout and stderr share the attach stream), up to build.output, until
// its stream ends or build.timeout passes.
struct StepOutput {
  std::string text;
  bool timed_out = false, output_exceeded = false;
};

Result<StepOutput> ReadStepOutput(int fd, const std::string& initial, const BuildSpec& b) {
  StepOutput out;
  StreamDemuxer demux;
  demux.Feed(initial);
  const auto deadline = Clock::now() + std::chrono::milliseconds(b.timeout_ms);
  char buf[65536];
  for (;;) {
    for (;;) {
      auto frame = demux.Next();
      if (!frame.ok()) return frame.error().Wrap("the build container's output");
      if (!frame->has_value()) break;
      const std::string& p = (*frame)->payload;
      if (out.text.size() + p.size() > b.output_bytes) {
        out.text.append(p, 0, b.output_bytes - out.text.size());
        out.output_exceeded = true;
        return out;
      }
      out.text += p;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      out.timed_out = true;
      return out;
    }
    struct pollfd p {fd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (r < 0 && errno != EINTR) return Error::FromErrno("poll the build container");
    if (r <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return out;
    demux.Feed(std::string_view(buf, static_cast<size_t>(n)));
  }
}

}  // namespace

Status DockerEnvBuilder::LabelWithReport(const Policy& policy, const std::string& image, const std::string& key,
                                         const Json& config) const {
  if (config.contains("Labels") && config["Labels"].is_object() && config["Labels"].contains(kLabelBuildPython))
    return OkStatus();
  ContainerGuard guard{*engine_, ""};
  auto r = RunStep(policy, image, EnvironmentReportArgv(policy.build.apt), &guard.id);
  if (!r.ok()) return r.error();
  if (r->exit_code != 0) return Error{"exit code " + std::to_string(r->exit_code) + ": " + OutputTail(r->output, 500)};
  // The report is the last line (a step's stdout and stderr share the stream).
  std::string line = r->output;
  while (!line.empty() && line.back() == '\n') line.pop_back();
  line = line.substr(line.rfind('\n') == std::string::npos ? 0 : line.rfind('\n') + 1);
  Json report = Json::parse(line, nullptr, false);
  if (report.is_discarded() || !report.is_object()) return Error{"not a report: " + OutputTail(r->output, 500)};
  const Json labels = config.contains("Labels") && config["Labels"].is_object() ? config["Labels"] : Json::object();
  auto label = [&](const char* k, const std::string& otherwise) {
    return labels.contains(k) && labels[k].is_string() ? labels[k].get<std::string>() : otherwise;
  };
  Json c = CommitConfig(config, policy, key, label(kLabelBuildStep, ""), label(kLabelBuildBase, policy.image));
  // Labels live in the image's config: a list past 256 KiB keeps its first entries (still JSON).
  // The image's python wrote it: anything not of the expected shape is left out.
  auto bounded = [&](const char* field) {
    Json kept = Json::array();
    size_t bytes = 2;
    for (const auto& [name, version] : ReadNameVersions(report.value(field, Json::array()))) {
      Json e = Json::array({name, version});
      bytes += e.dump().size() + 1;
      if (bytes > (256u << 10)) break;
      kept.push_back(std::move(e));
    }
    return kept.dump();
  };
  const Json python = report.contains("python") ? report["python"] : Json();
  c["Labels"][kLabelBuildPython] = python.is_string() ? python.get<std::string>().substr(0, 64) : "";
  c["Labels"][kLabelBuildPackages] = bounded("packages");
  c["Labels"][kLabelBuildApt] = bounded("apt");
  auto committed = engine_->Commit(guard.id, kBuildImageRepository, key, c, std::chrono::milliseconds(600000));
  if (!committed.ok()) return committed.error();
  return OkStatus();
}

std::string DockerEnvBuilder::Built(const Policy& policy, const std::string& base) const {
  if (!policy.build.files.empty()) return "";
  std::lock_guard<std::mutex> lock(mu_);
  auto it = memo_.find(base + "\n" + BuildSpecMemoKey(policy.build));
  return it == memo_.end() ? "" : it->second;
}

Result<DockerEnvBuilder::StepResult> DockerEnvBuilder::RunStep(const Policy& policy, const std::string& parent,
                                                               const std::vector<std::string>& argv,
                                                               std::string* container_id) const {
  const BuildSpec& b = policy.build;
  Json entrypoint = Json::array({"/bin/sh", "-c", GateScript(), "llm-sandbox-build-step"});
  Json host = {
      {"NetworkMode", "none"},  // never the bridge: the egress proxy is the only way out
      {"CapDrop", Json::array({"ALL"})},
      // Root owning and replacing the image's files (pip, chown in a run step); nothing else.
      {"CapAdd", Json::array({"CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "SETUID", "SETGID"})},
      {"SecurityOpt", Json::array({"no-new-privileges"})},
      {"PidsLimit", 1024},
      {"Memory", b.memory_bytes},
      {"MemorySwap", b.memory_bytes},
      {"Tmpfs", {{"/tmp", FormatTmpfsOptions(b.memory_bytes, 01777, false, true, true)}}},
      {"IpcMode", "private"},
      {"Init", false},
      {"AutoRemove", false},
      {"Privileged", false},
      {"Runtime", "runc"},
  };
  Json spec = {{"Image", parent},          {"Entrypoint", entrypoint},  {"Cmd", argv},
               {"User", "0:0"},            {"WorkingDir", "/"},         {"Hostname", "build"},
               {"Labels", {{kLabelOwner, owner_}}},
               {"AttachStdin", true},      {"AttachStdout", true},      {"AttachStderr", true},
               {"OpenStdin", true},        {"StdinOnce", true},         {"Tty", false},
               {"HostConfig", host}};
  LSB_ASSIGN_OR_RETURN(*container_id, engine_->CreateContainer(spec));
  const std::string id = *container_id;
  LSB_ASSIGN_OR_RETURN(Hijacked hj, engine_->Hijack("/containers/" + id + "/attach?stream=1&stdin=1&stdout=1&stderr=1"));
  LSB_TRY(engine_->StartContainer(id));
  // Fail closed: without its proxy the step has no network at all, but a step that needs none
  // must not pass silently either; every step gets build.network's proxy, as on native.
  auto egress = egress::PrepareBoxEgress(b.network_allow, b.network_deny, {}, egress_);
  if (!egress.ok()) return egress.error().Wrap("container.build.network");
  auto proxy = AttachEgress(*engine_, id, std::move(egress).value(), egress_);
  if (!proxy.ok())
    return proxy.error().Wrap("container.build on Docker: the build's egress proxy (build.network) could not be "
                              "attached; the step does not run without it");
  (*proxy)->BeginRun();
  LSB_TRY(SendAll(hj.fd.get(), "go\n"));
  ::shutdown(hj.fd.get(), SHUT_WR);  // the step's stdin ends here (StdinOnce)

  LSB_ASSIGN_OR_RETURN(StepOutput read, ReadStepOutput(hj.fd.get(), hj.initial, b));
  StepResult out;
  out.output = std::move(read.text);
  out.timed_out = read.timed_out;
  out.output_exceeded = read.output_exceeded;
  // The engine does not mark a container stopped while its output waits to be read: the attach
  // connection goes first, then the kill.
  hj.fd = UniqueFd();
  if (out.timed_out || out.output_exceeded) (void)engine_->KillContainer(id);
  LSB_ASSIGN_OR_RETURN(bool stopped, engine_->WaitNotRunning(id, std::chrono::milliseconds(30000)));
  (*proxy)->Stop();
  if (!stopped) {
    (void)engine_->KillContainer(id);
    return Error{"container.build: the build container " + id.substr(0, 12) + " did not stop"};
  }
  LSB_ASSIGN_OR_RETURN(Json insp, engine_->InspectContainer(id));
  const Json state = insp.value("State", Json::object());
  out.exit_code = state.value("ExitCode", -1);
  out.oom = state.value("OOMKilled", false);
  return out;
}

namespace {

// A files entry's tar (bounded by LayerWriteLimits, the same as native's layer), written aside and
// read back for the engine; its diff id into `diff_id`.
Result<std::string> FilesTar(const BuildFile& file, const std::string& policy_dir, const std::string& label,
                             std::string* diff_id) {
  char path[] = "/tmp/lsb-build-files-XXXXXX";
  UniqueFd fd(::mkstemp(path));
  if (!fd) return Error::FromErrno("container.build " + label + ": a temporary file");
  auto st = WriteFilesLayer(file, policy_dir, fd.get(), diff_id);
  auto text = st.ok() ? ReadFile(path) : Result<std::string>(st.error());
  ::unlink(path);
  if (!text.ok()) return text.error().Wrap("container.build " + label);
  return text;
}

}  // namespace

// One Build call as its steps go: the image so far and its config, its key, how many steps ran.
struct DockerEnvBuilder::Run {
  const Policy& policy;
  const Progress& progress;
  std::string parent;  // the engine's name of the image so far
  Json parent_config;  // its Config, for the next step's commit
  std::string key;
  int built = 0;
  void Say(const std::string& line) const {
    if (progress) progress(line);
  }
};

Result<DockerBuilt> DockerEnvBuilder::Build(const Policy& policy, const std::string& base, const Progress& progress) {
  const BuildSpec& b = policy.build;
  const std::string memo_key = base + "\n" + BuildSpecMemoKey(b);
  std::vector<BuildStep> steps = PlanBuildSteps(b);
  if (b.files.empty()) {
    std::string known = Built(policy, base);
    if (!known.empty()) {
      auto present = engine_->ImageExists(known);
      if (present.ok() && *present) return DockerBuilt{known, static_cast<int>(steps.size()), 0};
    }
  }
  LSB_ASSIGN_OR_RETURN(Json base_info, engine_->InspectImage(base));
  Run run{policy, progress, base, base_info.value("Config", Json::object()),
          BuildBaseKey("docker", base_info.value("Id", base))};
  if (!run.parent_config.is_object()) run.parent_config = Json::object();
  for (size_t i = 0; i < steps.size(); ++i)
    LSB_TRY(BuildStepOf(run, steps[i], BuildStepLabel(i, steps.size(), steps[i])));
  // What the environment holds, as labels of its image (image inspect --docker), as the native
  // store's build record; a failure leaves the image unlabelled, not the build failed.
  if (!steps.empty()) {
    if (auto st = LabelWithReport(policy, run.parent, run.key, run.parent_config); !st.ok())
      run.Say("the environment's report (python, packages) could not be taken: " + st.error().message);
  }
  if (b.files.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    memo_[memo_key] = run.parent;
  }
  return DockerBuilt{run.parent, static_cast<int>(steps.size()), run.built};
}

Result<bool> DockerEnvBuilder::FindStep(Run& run, const std::string& ref) const {
  auto info = engine_->InspectImage(ref);
  if (!info.ok()) {
    if (info.error().code == ErrorCode::kNotFound) return false;
    return info.error();
  }
  run.parent_config = info->value("Config", Json::object());
  if (!run.parent_config.is_object()) run.parent_config = Json::object();
  return true;
}

Status DockerEnvBuilder::BuildStepOf(Run& run, const BuildStep& s, const std::string& label) {
  std::string files_tar, diff_id;
  if (s.file) {
    LSB_ASSIGN_OR_RETURN(files_tar, FilesTar(*s.file, run.policy.build.policy_dir, label, &diff_id));
  }
  run.key = BuildStepKey(run.key, s, diff_id);
  const std::string ref = std::string(kBuildImageRepository) + ":" + run.key;
  LSB_ASSIGN_OR_RETURN(bool have, FindStep(run, ref));
  if (have) {
    run.Say(label + ": cached");
    run.parent = ref;
    return OkStatus();
  }
  // One build of this key at a time on this host (threads and processes): who waited finds it.
  LSB_ASSIGN_OR_RETURN(std::string lock_dir, LockDir());
  LSB_ASSIGN_OR_RETURN(image::FileLock lock,
                       image::FileLock::Exclusive(lock_dir + "/docker-build-" + run.key.substr(0, 32) + ".lock"));
  LSB_ASSIGN_OR_RETURN(have, FindStep(run, ref));
  if (have) {
    run.Say(label + ": cached (built by another build meanwhile)");
    run.parent = ref;
    return OkStatus();
  }
  run.Say(label + ": building");
  const auto started = Clock::now();
  ContainerGuard guard{*engine_, ""};
  LSB_TRY(StepContainer(run, s, label, files_tar, &guard.id));
  Json config = CommitConfig(run.parent_config, run.policy, run.key, s.description, run.policy.image);
  auto committed = engine_->Commit(guard.id, kBuildImageRepository, run.key, config, std::chrono::milliseconds(600000));
  if (!committed.ok()) return committed.error().Wrap("container.build " + label + ": commit the step's image");
  run.parent = ref;
  LSB_ASSIGN_OR_RETURN(have, FindStep(run, ref));  // its config, for the next step's commit
  ++run.built;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count();
  run.Say(label + ": built in " + std::to_string(ms) + " ms");
  return OkStatus();
}

Status DockerEnvBuilder::StepContainer(const Run& run, const BuildStep& s, const std::string& label,
                                       const std::string& files_tar, std::string* container_id) const {
  if (s.file) {
    Json spec = {{"Image", run.parent}, {"Entrypoint", Json::array({"/bin/true"})}, {"Cmd", Json::array()},
                 {"Labels", {{kLabelOwner, owner_}}}, {"NetworkDisabled", true},
                 {"HostConfig", {{"NetworkMode", "none"}}}};
    auto id = engine_->CreateContainer(spec);
    if (!id.ok()) return id.error().Wrap("container.build " + label);
    *container_id = *id;
    if (auto st = engine_->PutArchive(*container_id, "/", files_tar, std::chrono::milliseconds(300000)); !st.ok())
      return st.error().Wrap("container.build " + label);
    return OkStatus();
  }
  const BuildSpec& b = run.policy.build;
  auto r = RunStep(run.policy, run.parent, s.argv, container_id);
  if (!r.ok()) return r.error().Wrap("container.build " + label);
  auto fail = [&](const std::string& why) {
    return Error{"container.build " + label + " " + why + "; its output ends with:\n" + OutputTail(r->output, 2000)};
  };
  if (r->timed_out) return fail("did not finish within build.timeout " + std::to_string(b.timeout_ms / 1000) + "s");
  if (r->output_exceeded) return fail("printed more than build.output (" + std::to_string(b.output_bytes) + " bytes)");
  if (r->oom) return fail("was killed at build.memory (" + std::to_string(b.memory_bytes) + " bytes)");
  if (r->exit_code != 0)
    return fail("failed with exit code " + std::to_string(r->exit_code) +
                StepFailureHint(s, r->exit_code, r->output, run.policy.image));
  return OkStatus();
}

}  // namespace lsb::docker
