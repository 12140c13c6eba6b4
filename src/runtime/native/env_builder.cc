#include "runtime/native/env_builder.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <optional>
#include <chrono>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "base/io.h"
#include "base/random_id.h"
#include "base/sha256.h"
#include "base/time_format.h"
#include "image/layer_writer.h"
#include "image/reference.h"
#include "image/store.h"
#include "image/store_lock.h"
#include "policy/build_rules.h"
#include "policy/units.h"
#include "protocol/messages.h"
#include "runtime/build_plan.h"
#include "runtime/native/build_box.h"

namespace lsb::native {
namespace {

using nlohmann::json;

// mkdir -p, mode 0755.
Status MakeDirs(const std::string& path) {
  for (size_t p = 1; p <= path.size(); ++p) {
    if (p != path.size() && path[p] != '/') continue;
    std::string part = path.substr(0, p);
    if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return Error::FromErrno("mkdir " + part);
  }
  return OkStatus();
}

// base/io.h's WriteFile writes files that exist (cgroup files); these are new ones.
Status CreateFile(const std::string& path, std::string_view data) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) return Error::FromErrno("create " + path);
  return WriteAll(fd.get(), data);
}

// Readers never see half a record: written aside, then renamed.
Status WriteAtomically(const std::string& path, const std::string& data) {
  const std::string tmp = path + RandomHex(".tmp-", 6);
  LSB_TRY(CreateFile(tmp, data));
  if (::rename(tmp.c_str(), path.c_str()) != 0) return Error::FromErrno("rename " + tmp);
  return OkStatus();
}

Result<std::string> ReadBlob(const std::string& store_root, const std::string& digest) {
  if (digest.rfind("sha256:", 0) != 0) return Error{"unexpected digest " + digest};
  return ReadFile(store_root + "/blobs/sha256/" + digest.substr(7));
}

std::string WriteBlob(const std::string& layout, const std::string& data) {
  std::string hex = Hex(Sha256(data));
  (void)CreateFile(layout + "/blobs/sha256/" + hex, data);
  return "sha256:" + hex;
}

// An OCI layout in `layout` for `parent` plus one layer (its tar at `layer_tar`), named `tag`.
Status WriteChildLayout(const std::string& store_root, const image::ImageRoot& parent, const std::string& layout,
                        const std::string& layer_tar, const std::string& diff_id, const std::string& tag,
                        const std::string& created_by, const Policy& policy) {
  LSB_TRY(MakeDirs(layout + "/blobs/sha256"));
  LSB_ASSIGN_OR_RETURN(std::string manifest_text, ReadBlob(store_root, parent.manifest_digest));
  json manifest = json::parse(manifest_text, nullptr, false);
  if (manifest.is_discarded() || !manifest.contains("config") || !manifest.contains("layers"))
    return Error{"the stored manifest of " + parent.reference + " cannot be read"};
  auto link_blob = [&](const std::string& digest) -> Status {
    std::string hex = digest.substr(7);
    if (::link((store_root + "/blobs/sha256/" + hex).c_str(), (layout + "/blobs/sha256/" + hex).c_str()) != 0 &&
        errno != EEXIST)
      return Error::FromErrno("link blob " + digest + " into the build's layout");
    return OkStatus();
  };
  for (const auto& l : manifest["layers"]) LSB_TRY(link_blob(l.value("digest", "")));
  LSB_ASSIGN_OR_RETURN(std::string config_text, ReadBlob(store_root, manifest["config"].value("digest", "")));
  json config = json::parse(config_text, nullptr, false);
  if (config.is_discarded()) return Error{"the stored config of " + parent.reference + " cannot be read"};
  config["rootfs"]["diff_ids"].push_back(diff_id);
  config["history"].push_back({{"created", Rfc3339(std::chrono::system_clock::now())}, {"created_by", created_by}});
  config["config"]["Labels"]["org.llm-sandbox.policy"] = policy.name;
  if (::rename(layer_tar.c_str(), (layout + "/blobs/sha256/" + diff_id.substr(7)).c_str()) != 0)
    return Error::FromErrno("move the layer into the build's layout");
  struct stat st {};
  ::stat((layout + "/blobs/sha256/" + diff_id.substr(7)).c_str(), &st);
  manifest["layers"].push_back({{"mediaType", "application/vnd.oci.image.layer.v1.tar"}, {"digest", diff_id},
                                {"size", static_cast<uint64_t>(st.st_size)}});
  std::string config_out = config.dump();
  manifest["config"] = {{"mediaType", "application/vnd.oci.image.config.v1+json"},
                        {"digest", WriteBlob(layout, config_out)}, {"size", config_out.size()}};
  manifest["mediaType"] = "application/vnd.oci.image.manifest.v1+json";
  manifest["schemaVersion"] = 2;
  std::string manifest_out = manifest.dump();
  json index{{"schemaVersion", 2},
             {"manifests", json::array({{{"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                                         {"digest", WriteBlob(layout, manifest_out)},
                                         {"size", manifest_out.size()},
                                         {"annotations", {{"org.opencontainers.image.ref.name", tag}}}}})}};
  LSB_TRY(CreateFile(layout + "/index.json", index.dump()));
  return CreateFile(layout + "/oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
}

}  // namespace

namespace {

Result<BuildRecord> ParseRecord(const std::string& path, const std::string& reference) {
  LSB_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseBuildRecord(text, path, reference);
}

bool PolicyNameOk(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (char c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  return n[0] != '.';
}

}  // namespace

Result<BuildRecord> ReadBuildRecord(const std::string& store_root, const std::string& reference) {
  size_t colon = reference.rfind(':');
  if (reference.find(kBuildRepository) == std::string::npos || colon == std::string::npos)
    return Error{ErrorCode::kNotFound, reference + " is not a built environment"};
  std::string key = reference.substr(colon + 1);
  for (char c : key)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return Error{ErrorCode::kNotFound, reference + " is not a built environment"};
  return ParseRecord(store_root + "/builds/" + key + ".json", reference);
}

Result<BuildRecord> ReadPolicyBuildRecord(const std::string& store_root, const std::string& policy) {
  if (!PolicyNameOk(policy)) return Error{ErrorCode::kNotFound, "not a policy name"};
  return ParseRecord(store_root + "/builds/by-policy/" + policy + ".json", "");
}

uint64_t EnvironmentBuilder::steps_run() const {
  std::lock_guard<std::mutex> lock(mu_);
  return steps_run_;
}

namespace {

// A run step's box: the parent's layers under it, its env with a PATH, the build's egress proxy as
// its only way out, build.*'s bounds.
BuildStepRequest CommandRequest(const BuildStep& s, const image::ImageRoot& parent, const BuildSpec& b,
                                const std::string& dir, const BuilderSettings& settings) {
  BuildStepRequest req;
  req.lowers = parent.layers;
  req.dir = dir;
  req.argv = s.argv;
  req.writable = s.writable;
  req.env = parent.config.env;
  bool has_path = false;
  for (const auto& e : req.env) has_path = has_path || e.rfind("PATH=", 0) == 0;
  if (!has_path) req.env.push_back("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  const std::string proxy = std::string("http://") + protocol::kEgressProxyAddress;
  for (const char* v : {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"})
    req.env.push_back(std::string(v) + "=" + proxy);
  req.env.push_back("NO_PROXY=");
  req.env.push_back("HOME=/root");
  req.workdir = "/";
  req.timeout_ms = b.timeout_ms;
  req.memory_bytes = b.memory_bytes;
  req.output_bytes = b.output_bytes;
  req.disk_bytes = b.disk_bytes;
  req.allow = b.network_allow;
  req.deny = b.network_deny;
  req.egress = settings.egress;
  req.cgroup_parent = settings.cgroup_parent;
  req.id_base = settings.id_base;
  return req;
}

// Why a run step failed, after "container.build step i/n (...) "; "" when it did not.
std::string StepFailure(const BuildStepOutcome& outcome, const BuildStep& s, const Policy& policy) {
  const BuildSpec& b = policy.build;
  if (outcome.timed_out) return "did not finish within build.timeout " + std::to_string(b.timeout_ms / 1000) + "s";
  if (outcome.output_exceeded) return "printed more than build.output (" + std::to_string(b.output_bytes) + " bytes)";
  if (outcome.disk_full)
    return "failed with exit code " + std::to_string(outcome.exit_code) + " after it filled build.disk (" +
           units::FormatBytes(b.disk_bytes) + ", the room a step has to write into the image); raise "
           "container.build.disk (e.g. disk: 8G) if the step needs more";
  if (outcome.exit_code != 0)
    return "failed with exit code " + std::to_string(outcome.exit_code) +
           StepFailureHint(s, outcome.exit_code, outcome.output, policy.image);
  return "";
}

// The step's upper directory as a layer tar at `layer_tar`; its diff id.
Result<std::string> WriteUpperLayer(const std::string& upper_dir, const std::string& layer_tar, const std::string& label) {
  UniqueFd upper(::open(upper_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!upper) return Error::FromErrno("open the build step's upper layer");
  UniqueFd out(::open(layer_tar.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!out) return Error::FromErrno("create " + layer_tar);
  image::LayerTarWriter w(out.get(), image::LayerWriteLimits{});
  if (auto st = w.AddTree(upper.get(), "", /*overlay_upper=*/true, /*refuse_symlinks=*/false); !st.ok())
    return st.error().Wrap("container.build " + label + ": the step's changes");
  return w.Finish();
}

// What the environment holds, asked of its own python, into `record` (python, packages, apt);
// left out when the report fails.
Status AddEnvironmentReport(json& record, const image::ImageRoot& env, const BuildSpec& b, image::Store& store,
                            const BuilderSettings& settings, const CgroupLayout& layout) {
  LSB_ASSIGN_OR_RETURN(image::TempDir tmp, store.NewTempDir("build-inspect"));
  BuildStepRequest req;
  req.lowers = env.layers;
  req.dir = tmp.path();
  req.argv = EnvironmentReportArgv(b.apt);
  req.env = env.config.env;
  req.env.push_back("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  req.timeout_ms = 60000;
  req.memory_bytes = b.memory_bytes;
  req.output_bytes = 1 << 20;
  req.disk_bytes = b.disk_bytes;
  req.cgroup_parent = settings.cgroup_parent;
  req.id_base = settings.id_base;
  auto o = RunBuildStep(req, layout);
  if (!o.ok() || o->exit_code != 0) return OkStatus();
  json info = json::parse(o->output, nullptr, false);
  if (!info.is_object()) return OkStatus();
  // The image's python wrote it: a python that is not a string is left out (lists are filtered by
  // shape when read back).
  record["python"] = info.contains("python") && info["python"].is_string() ? info["python"] : json("");
  record["packages"] = info.value("packages", json::array());
  record["apt"] = info.value("apt", json::array());
  return OkStatus();
}

}  // namespace

// One Build call as its steps go: the image so far, its key, the log, how many steps ran.
struct EnvironmentBuilder::Run {
  const Policy& policy;
  image::Store& store;
  const std::string root;  // the store's
  const Progress& progress;
  image::ImageRoot parent;
  std::string key;
  std::string log;
  int built = 0;
  void Say(const std::string& line) {
    log += line + "\n";
    if (progress) progress(line);
  }
};

Result<BuiltEnvironment> EnvironmentBuilder::Build(const Policy& policy, const image::ImageRoot& base,
                                                   const Progress& progress) {
  const BuildSpec& b = policy.build;
  LSB_ASSIGN_OR_RETURN(image::Store * store, store_->Get());
  std::vector<BuildStep> steps = PlanBuildSteps(b);
  const std::string memo_key = base.manifest_digest + "\n" + BuildSpecMemoKey(b);
  if (auto known = Memoized(*store, b, memo_key, steps.size())) return std::move(*known);
  Run run{policy, *store, store->root(), progress, base, BuildBaseKey("", base.manifest_digest)};
  LSB_TRY(MakeDirs(run.root + "/builds"));
  std::vector<std::string> descriptions;
  for (size_t i = 0; i < steps.size(); ++i) {
    descriptions.push_back(steps[i].description);
    LSB_TRY(BuildStepOf(run, steps[i], BuildStepLabel(i, steps.size(), steps[i])));
  }
  BuiltEnvironment env{run.parent, std::string(kBuildRepository) + ":" + run.key, static_cast<int>(steps.size()),
                       run.built, run.root + "/builds/" + run.key + ".log"};
  LSB_TRY(WriteRecords(run, base, descriptions, env));
  if (b.files.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    memo_[memo_key] = env.reference;
  }
  return env;
}

std::optional<BuiltEnvironment> EnvironmentBuilder::Memoized(image::Store& store, const BuildSpec& b,
                                                             const std::string& memo_key, size_t steps) const {
  if (!b.files.empty()) return std::nullopt;  // a files step's content is read again each build
  std::string ref_text;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = memo_.find(memo_key); it != memo_.end()) ref_text = it->second;
  }
  if (ref_text.empty()) return std::nullopt;
  auto ref = image::ParseImageReference(ref_text);
  if (!ref.ok()) return std::nullopt;
  auto r = store.Resolve(*ref);
  if (!r.ok()) return std::nullopt;
  return BuiltEnvironment{std::move(r).value(), ref_text, static_cast<int>(steps), 0, ""};
}

Status EnvironmentBuilder::BuildStepOf(Run& run, const BuildStep& s, const std::string& label) {
  // Scratch space in the store's tmp/ (removed when the step is done), made only when needed.
  std::optional<image::TempDir> tmp;
  auto scratch = [&]() -> Result<std::string> {
    if (!tmp) {
      auto made = run.store.NewTempDir("build");
      if (!made.ok()) return made.error();
      tmp = std::move(made).value();
    }
    return tmp->path();
  };
  std::string layer_tar, diff_id;
  if (s.file) {
    LSB_ASSIGN_OR_RETURN(std::string dir, scratch());
    layer_tar = dir + "/layer.tar";
    UniqueFd out(::open(layer_tar.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (!out) return Error::FromErrno("create " + layer_tar);
    if (auto st = WriteFilesLayer(*s.file, run.policy.build.policy_dir, out.get(), &diff_id); !st.ok())
      return st.error().Wrap("container.build " + label);
  }
  run.key = BuildStepKey(run.key, s, diff_id);
  const std::string tag = run.key;
  LSB_ASSIGN_OR_RETURN(image::ImageReference ref, image::ParseImageReference(std::string(kBuildRepository) + ":" + tag));
  if (auto r = run.store.Resolve(ref); r.ok()) {
    run.Say(label + ": cached");
    run.parent = std::move(r).value();
    return OkStatus();
  }
  // One build of this step at a time (threads and processes alike): who waited finds it stored.
  LSB_ASSIGN_OR_RETURN(image::FileLock lock,
                       image::FileLock::Exclusive(run.root + "/tmp/building-" + tag.substr(0, 32) + ".lock"));
  if (auto r = run.store.Resolve(ref); r.ok()) {
    run.Say(label + ": cached (built by another build meanwhile)");
    run.parent = std::move(r).value();
    return OkStatus();
  }
  run.Say(label + ": building");
  const auto started = std::chrono::steady_clock::now();
  LSB_ASSIGN_OR_RETURN(std::string dir, scratch());
  if (!s.file) {
    layer_tar = dir + "/layer.tar";
    LSB_ASSIGN_OR_RETURN(diff_id, RunCommandStep(run, s, label, dir, layer_tar));
  }
  const std::string layout = dir + "/layout";
  LSB_TRY(WriteChildLayout(run.root, run.parent, layout, layer_tar, diff_id, tag, s.description, run.policy));
  auto imported = run.store.ImportOciLayout(layout, ref);
  if (!imported.ok()) return imported.error().Wrap("container.build " + label + ": store the step's layer");
  run.parent = std::move(imported).value();
  ++run.built;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  run.Say(label + ": built in " + std::to_string(ms) + " ms");
  return OkStatus();
}

Result<std::string> EnvironmentBuilder::RunCommandStep(Run& run, const BuildStep& s, const std::string& label,
                                                       const std::string& dir, const std::string& layer_tar) {
  BuildStepRequest req = CommandRequest(s, run.parent, run.policy.build, dir, settings_);
  LSB_ASSIGN_OR_RETURN(BuildStepOutcome outcome, RunBuildStep(req, layout_()));
  {
    std::lock_guard<std::mutex> l(mu_);
    ++steps_run_;
  }
  run.log += outcome.output;
  if (std::string why = StepFailure(outcome, s, run.policy); !why.empty()) {
    (void)CreateFile(run.root + "/builds/" + run.key + ".log", run.log + outcome.diagnostics);
    return Error{"container.build " + label + " " + why + "; its output ends with:\n" +
                 OutputTail(outcome.output + outcome.diagnostics, 2000)};
  }
  return WriteUpperLayer(outcome.upper, layer_tar, label);  // while `outcome` holds the upper's mount
}

Status EnvironmentBuilder::WriteRecords(Run& run, const image::ImageRoot& base, const std::vector<std::string>& descriptions,
                                        const BuiltEnvironment& env) {
  const std::string record_path = run.root + "/builds/" + run.key + ".json";
  if (run.built > 0 || ::access(record_path.c_str(), F_OK) != 0) {
    json record{{"reference", env.reference}, {"policy", run.policy.name}, {"source_file", run.policy.source_file},
                {"base", base.reference}, {"base_digest", base.manifest_digest}, {"steps", descriptions}};
    LSB_TRY(AddEnvironmentReport(record, run.parent, run.policy.build, run.store, settings_, layout_()));
    (void)WriteAtomically(record_path, record.dump(2));
    if (run.built > 0) (void)CreateFile(env.log_path, run.log);
  }
  // Which environment the policy of this name has now (GET /v1/policies/{name}).
  if (PolicyNameOk(run.policy.name) && MakeDirs(run.root + "/builds/by-policy").ok()) {
    if (auto text = ReadFile(record_path); text.ok())
      (void)WriteAtomically(run.root + "/builds/by-policy/" + run.policy.name + ".json", *text);
  }
  return OkStatus();
}

}  // namespace lsb::native
