// container.build on the Docker backend (docs/policy.md "container.build"): the same steps as the
// native backend (runtime/build_plan.h), each one image in the engine made by create + commit:
//   - pip and run: a container of the previous step's image runs the step as root with network
//     mode "none", no capabilities but the file-owning ones, no-new-privileges, the build's
//     memory, 1024 pids, a /tmp tmpfs; its only way out is the build's egress proxy
//     (docker::AttachEgress, 127.0.0.1:3128 in its namespace, build.network's lists); the step
//     waits on stdin until the proxy listens. Time (build.timeout) and output (build.output) are
//     bounded: past either the container is killed and the build fails naming the step.
//   - files: the entry's tar (the same as native's layer) copied into a created container.
// Step i is tagged kBuildRepository:<key_i> (key_0 from the base image's id, key_i chained as
// build_plan.h says) and labelled kLabelBuild, kLabelBuildKey, kLabelPolicy: a second build finds
// every tag and runs nothing; a changed step rebuilds from that step on; `image ls --docker` and
// `image prune --docker` find them by kLabelBuild. One build of a key at a time per host (a lock
// file in the runtime directory; who waited finds the tag).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/result.h"
#include "egress/egress_options.h"
#include "policy/policy.h"
#include "runtime/build_plan.h"
#include "runtime/docker/engine_client.h"

namespace lsb::docker {

inline constexpr const char* kLabelBuild = "io.llm-sandbox.build";           // "1" on every built image
inline constexpr const char* kLabelBuildKey = "io.llm-sandbox.build.key";    // the step's cache key
inline constexpr const char* kLabelBuildStep = "io.llm-sandbox.build.step";  // what the step did
inline constexpr const char* kLabelBuildBase = "io.llm-sandbox.build.base";  // the base image's name
// On the last step's image, asked of its own python3 after the build (image inspect --docker):
inline constexpr const char* kLabelBuildPython = "io.llm-sandbox.build.python";      // "3.11.2"
inline constexpr const char* kLabelBuildPackages = "io.llm-sandbox.build.packages";  // JSON [[name, version], ...]
inline constexpr const char* kLabelBuildApt = "io.llm-sandbox.build.apt";            // JSON [[name, version], ...]

struct DockerBuilt {
  std::string image;  // kBuildRepository:<key> of the last step
  int steps = 0, steps_built = 0;
};

class DockerEnvBuilder {
 public:
  using Progress = std::function<void(const std::string& line)>;
  DockerEnvBuilder(std::shared_ptr<const EngineClient> engine, egress::EgressOptions egress, std::string owner)
      : engine_(std::move(engine)), egress_(std::move(egress)), owner_(std::move(owner)) {}

  // `base`: the policy's image as the engine names it (mapped), present in the engine.
  Result<DockerBuilt> Build(const Policy& policy, const std::string& base, const Progress& progress);
  // The image the last Build of this policy's spec on `base` gave, "" when none yet (no engine call).
  std::string Built(const Policy& policy, const std::string& base) const;

 private:
  struct Run;
  // Whether step image `ref` is in the engine; when it is, `run` takes its config.
  Result<bool> FindStep(Run& run, const std::string& ref) const;
  // One step: found in the engine (cached), or run in a container and committed as `ref`.
  Status BuildStepOf(Run& run, const BuildStep& s, const std::string& label);
  // The container whose commit is the step's image (its id into `container_id`, which the caller
  // removes): a files step's tar copied in, or a pip/run step run to a good end.
  Status StepContainer(const Run& run, const BuildStep& s, const std::string& label, const std::string& files_tar,
                       std::string* container_id) const;
  struct StepResult {
    int exit_code = 0;
    bool timed_out = false, output_exceeded = false, oom = false;
    std::string output;
  };
  Result<StepResult> RunStep(const Policy& policy, const std::string& parent, const std::vector<std::string>& argv,
                             std::string* container_id) const;
  // Labels `image` (the tag `key` of kBuildImageRepository) with what its python3 and dpkg report
  // (kLabelBuildPython, ...), once: a commit of the reporting container under the same tag.
  Status LabelWithReport(const Policy& policy, const std::string& image, const std::string& key,
                         const nlohmann::json& config) const;

  std::shared_ptr<const EngineClient> engine_;
  egress::EgressOptions egress_;
  std::string owner_;
  mutable std::mutex mu_;
  std::map<std::string, std::string> memo_;  // base + spec (no files steps) -> last image
};

}  // namespace lsb::docker
