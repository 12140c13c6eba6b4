// container.build on the native backend (docs/policy.md "container.build"): the policy's steps
// (pip, then each files entry, then each run command) applied to its image, one build box per
// step (build_box.h), each step's changes one layer. Step i's image is stored in the image store
// as build.llm-sandbox.local/env:<key_i>, key_i = SHA-256(key_{i-1}, step i), key_0 the base's
// manifest digest: a second build finds every step stored and runs nothing; a changed step
// rebuilds from that step on (a files step's key holds its content's digest). One build of a step
// at a time, across threads and processes: a lock file per key in the store's tmp/, and who waited
// finds the step the other one stored. A failed step is an error naming it, with its output's tail.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "egress/egress_options.h"
#include "image/image_root.h"
#include "image/store_puller.h"
#include "policy/policy.h"
#include "runtime/build_plan.h"
#include "runtime/build_record.h"
#include "runtime/native/cgroup_layout.h"

namespace lsb::native {

inline constexpr const char* kBuildRepository = kBuildImageRepository;

struct BuiltEnvironment {
  image::ImageRoot root;
  std::string reference;           // the final step's image
  int steps = 0, steps_built = 0;  // steps_built 0: everything came from the cache
  std::string log_path;            // <store>/builds/<key>.log
};

// What a derived image is, from <store>/builds/<key>.json (image ls / inspect, GET /v1/policies).
using lsb::BuildRecord;
// The record of a stored image of kBuildRepository, by its reference's tag (the key).
Result<BuildRecord> ReadBuildRecord(const std::string& store_root, const std::string& reference);
// The record of the last build of the policy named `policy` in this store (GET /v1/policies/{name}):
// <store>/builds/by-policy/<name>.json, written by every build, cached or not.
Result<BuildRecord> ReadPolicyBuildRecord(const std::string& store_root, const std::string& policy);

struct BuilderSettings {
  egress::EgressOptions egress;
  std::string cgroup_parent = "llm-sandbox";
  uint32_t id_base = 100000;
};

class EnvironmentBuilder {
 public:
  using Progress = std::function<void(const std::string& line)>;
  EnvironmentBuilder(std::shared_ptr<image::SharedStore> store, BuilderSettings settings,
                     std::function<const CgroupLayout&()> layout)
      : store_(std::move(store)), settings_(std::move(settings)), layout_(std::move(layout)) {}

  Result<BuiltEnvironment> Build(const Policy& policy, const image::ImageRoot& base, const Progress& progress);
  uint64_t steps_run() const;

 private:
  struct Run;
  // The environment a build of the same spec on the same base gave this process, still stored.
  std::optional<BuiltEnvironment> Memoized(image::Store& store, const BuildSpec& b, const std::string& memo_key,
                                           size_t steps) const;
  // One step: found stored (cached), or built into a layer and stored; `run` moves on to its image.
  Status BuildStepOf(Run& run, const BuildStep& s, const std::string& label);
  // A pip/run step in a build box (build_box.h): its changes as a layer tar; its diff id.
  Result<std::string> RunCommandStep(Run& run, const BuildStep& s, const std::string& label, const std::string& dir,
                                     const std::string& layer_tar);
  // <store>/builds/<key>.json (and .log) when a step ran or none is there, and by-policy/<name>.json.
  Status WriteRecords(Run& run, const image::ImageRoot& base, const std::vector<std::string>& descriptions,
                      const BuiltEnvironment& env);

  std::shared_ptr<image::SharedStore> store_;
  BuilderSettings settings_;
  std::function<const CgroupLayout&()> layout_;
  mutable std::mutex mu_;
  uint64_t steps_run_ = 0;
  std::map<std::string, std::string> memo_;  // base digest + spec -> final reference (no files steps)
};

}  // namespace lsb::native
