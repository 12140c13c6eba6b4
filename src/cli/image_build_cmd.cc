// llm-sandbox image build POLICY: the policy's container.build, built into the image store now
// (docs/policy.md "container.build"), with a line per step on stderr and the build log's path.
#include <algorithm>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/registry_flags.h"
#include "egress/egress_options.h"
#include "image/registry_client.h"
#include "policy/policy_loader.h"
#include "runtime/backend_select.h"

namespace lsb::cli {
namespace {

constexpr const char* kBuildUsage =
    "usage: llm-sandbox image build [--backend native|docker] [--store DIR] [--images FILE] [--json]\n"
    "                               [--egress-resolve NAME:ADDR]... POLICY\n"
    "\n"
    "Builds POLICY's container.build (pip, files, run) on its container.image into the image store,\n"
    "one cached layer per step: steps already built are not run again. Progress goes to stderr;\n"
    "the result (image, steps built) to stdout. Also takes the registry options of image pull.\n"
    "--backend docker builds into the Docker engine instead (images build.llm-sandbox.local/env:<key>,\n"
    "labelled io.llm-sandbox.build; image ls/prune --docker list and remove them).\n"
    "Exit 0 on success, 1 when the build fails (the message names the step and ends with its\n"
    "output), 2 on bad usage.\n";

int BuildUsage(const std::string& problem) {
  std::fprintf(stderr, "llm-sandbox image build: %s\n\n%s", problem.c_str(), kBuildUsage);
  return 2;
}

// The result on stdout. A store's build names its digest and log; one held elsewhere (the Docker
// engine) says where, and its JSON names the backend.
void PrintBuilt(const EnvironmentBuild& built, const std::string& policy, const std::string& backend, bool as_json) {
  if (as_json) {
    nlohmann::json j{{"reference", built.reference}, {"steps", built.steps}, {"steps_built", built.steps_built},
                     {"policy", policy}};
    if (!built.digest.empty()) j["digest"] = built.digest;
    if (!built.log_path.empty()) j["log"] = built.log_path;
    if (!built.held_by.empty()) j["backend"] = backend;
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  std::string notes;
  if (built.steps_built && !built.log_path.empty()) notes += ", log " + built.log_path;
  if (!built.held_by.empty()) notes += ", " + built.held_by;
  std::printf("built %s for policy %s (%d steps, %d run now%s)\n", built.reference.c_str(), policy.c_str(), built.steps,
              built.steps_built, notes.c_str());
}

}  // namespace

int ImageBuildCommand(const Args& args) {
  std::string store, images, policy_arg, backend_name = "native";
  bool as_json = false;
  image::PullOptions pull;
  egress::EgressOptions egress;
  const auto& registry = RegistryFlagNames();
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string* out) -> bool {
      if (i + 1 >= args.size()) return false;
      *out = args[++i];
      return true;
    };
    std::string v;
    if (a == "--help" || a == "-h") {
      std::fputs(kBuildUsage, stdout);
      return 0;
    } else if (a == "--json") {
      as_json = true;
    } else if (a == "--backend") {
      if (!value(&backend_name) || (backend_name != "native" && backend_name != "docker"))
        return BuildUsage("--backend is native or docker");
    } else if (a == "--store") {
      if (!value(&store)) return BuildUsage("--store needs a directory");
    } else if (a == "--images") {
      if (!value(&images)) return BuildUsage("--images needs a file");
    } else if (std::find(registry.begin(), registry.end(), a) != registry.end()) {
      if (!value(&v)) return BuildUsage(a + " needs a value");
      ApplyRegistryFlag(a, v, pull);
    } else if (a.rfind("--egress-", 0) == 0) {
      if (!value(&v)) return BuildUsage(a + " needs a value");
      auto took = egress::ApplyEgressFlag(a, v, egress);
      if (!took.ok()) return BuildUsage(took.error().message);
      if (!*took) return BuildUsage("unknown option " + a);
    } else if (!a.empty() && a[0] == '-') {
      return BuildUsage("unknown option " + a);
    } else if (policy_arg.empty()) {
      policy_arg = a;
    } else {
      return BuildUsage("build takes one POLICY");
    }
  }
  if (policy_arg.empty()) return BuildUsage("missing POLICY (a file or a policy name)");
  auto policy = LoadPolicy(policy_arg);
  if (!policy.ok()) {
    std::fprintf(stderr, "llm-sandbox image build: policy: %s\n", policy.error().message.c_str());
    return 1;
  }
  if (policy->build.empty()) {
    std::fprintf(stderr, "llm-sandbox image build: policy '%s' has no container.build: nothing to build\n",
                 policy->name.c_str());
    return 1;
  }
  BackendOptions bo;
  bo.images_file = images;
  bo.egress = egress;
  auto progress = [](const std::string& line) { std::fprintf(stderr, "llm-sandbox image build: %s\n", line.c_str()); };
  bo.build_progress = progress;
  // Docker builds into its engine; native into the image store, wired here as `image pull` does.
  if (backend_name == "native") {
    if (auto st = WireImageStore(store, pull, bo); !st.ok()) {
      std::fprintf(stderr, "llm-sandbox image build: %s\n", st.error().message.c_str());
      return 1;
    }
  }
  auto backend = MakeBackend(backend_name, bo);
  if (!backend.ok()) {
    std::fprintf(stderr, "llm-sandbox image build: %s\n", backend.error().message.c_str());
    return 1;
  }
  auto built = (*backend)->BuildEnvironment(*policy, progress);
  if (!built.ok()) {
    std::fprintf(stderr, "llm-sandbox image build: %s\n", built.error().message.c_str());
    return 1;
  }
  PrintBuilt(*built, policy->name, (*backend)->name(), as_json);
  return 0;
}

}  // namespace lsb::cli
