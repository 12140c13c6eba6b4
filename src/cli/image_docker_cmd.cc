// llm-sandbox image ls --docker | image prune --docker: the Docker engine's images that
// container.build made (docker_builder.h: label io.llm-sandbox.build), with the policy, step and
// cache key each one carries; prune removes those no container uses (the engine refuses the rest).
// image inspect --docker REF: one built image's labels, its Python version and packages and the
// build.apt packages among them (asked of the image after its build: docker_builder.h).
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "policy/units.h"
#include "cli/commands.h"
#include "runtime/docker/container_spec.h"
#include "runtime/docker/docker_builder.h"
#include "runtime/docker/build_labels.h"
#include "runtime/docker/endpoint.h"
#include "runtime/docker/engine_client.h"

namespace lsb::cli {
namespace {

using docker::ImageLabel;

// [[name, version], ...] as a label holds it -> [{name, version}, ...].
nlohmann::json Pairs(const std::string& text) { return NameVersionObjects(docker::LabelPairs(text)); }

}  // namespace

int ImageDockerInspect(const std::string& reference, bool as_json) {
  auto ep = docker::DefaultEndpoint();
  if (!ep.ok()) return std::fprintf(stderr, "llm-sandbox image: %s\n", ep.error().message.c_str()), 1;
  auto engine = docker::EngineClient::Open(*ep);
  if (!engine.ok()) return std::fprintf(stderr, "llm-sandbox image: %s\n", engine.error().message.c_str()), 1;
  auto img = engine->InspectImage(reference);
  if (!img.ok()) return std::fprintf(stderr, "llm-sandbox image: %s\n", img.error().message.c_str()), 1;
  nlohmann::json config = img->value("Config", nlohmann::json::object());
  if (!config.is_object()) config = nlohmann::json::object();
  nlohmann::json out = {{"reference", reference},
                        {"id", img->value("Id", "")},
                        {"created", img->value("Created", "")},
                        {"size", img->value("Size", uint64_t{0})},
                        {"env", config.value("Env", nlohmann::json::array())}};
  if (ImageLabel(config, docker::kLabelBuild) == "1") {
    out["build"] = {{"policy", ImageLabel(config, docker::kLabelPolicy)},
                    {"base", ImageLabel(config, docker::kLabelBuildBase)},
                    {"key", ImageLabel(config, docker::kLabelBuildKey)},
                    {"step", ImageLabel(config, docker::kLabelBuildStep)},
                    {"python", ImageLabel(config, docker::kLabelBuildPython)},
                    {"packages", Pairs(ImageLabel(config, docker::kLabelBuildPackages))},
                    {"apt", Pairs(ImageLabel(config, docker::kLabelBuildApt))}};
  }
  if (as_json) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("reference:    %s\nid:           %s\ncreated:      %s\nsize:         %s\n", reference.c_str(),
              out["id"].get<std::string>().c_str(), out["created"].get<std::string>().c_str(),
              units::FormatBytes(out["size"].get<uint64_t>()).c_str());
  if (!out.contains("build")) {
    std::printf("(not an image container.build made: no python or package list)\n");
    return 0;
  }
  const auto& b = out["build"];
  std::printf("built for:    policy %s on %s\n  last step: %s\n", b["policy"].get<std::string>().c_str(),
              b["base"].get<std::string>().c_str(), b["step"].get<std::string>().c_str());
  const std::string python = b["python"].get<std::string>();
  std::printf("python:       %s\npackages:\n", python.empty() ? "(unknown)" : python.c_str());
  for (const auto& p : b["packages"])
    std::printf("  %s %s\n", p["name"].get<std::string>().c_str(), p["version"].get<std::string>().c_str());
  if (!b["apt"].empty()) std::printf("apt packages:\n");
  for (const auto& p : b["apt"])
    std::printf("  %s %s\n", p["name"].get<std::string>().c_str(), p["version"].get<std::string>().c_str());
  return 0;
}

int ImageDockerCommand(const std::string& sub, bool as_json) {
  auto ep = docker::DefaultEndpoint();
  if (!ep.ok()) return std::fprintf(stderr, "llm-sandbox image: %s\n", ep.error().message.c_str()), 1;
  auto engine = docker::EngineClient::Open(*ep);
  if (!engine.ok()) return std::fprintf(stderr, "llm-sandbox image: %s\n", engine.error().message.c_str()), 1;
  auto images = engine->ListImages(docker::kLabelBuild, "1");
  if (!images.ok()) return std::fprintf(stderr, "llm-sandbox image: %s\n", images.error().message.c_str()), 1;
  nlohmann::json out = nlohmann::json::array();
  int removed = 0, kept = 0;
  if (sub == "ls" && !as_json)
    std::printf("%-60s %10s  %-20s  %s\n", "NAME", "SIZE", "POLICY", "STEP");
  for (const auto& img : *images) {
    std::vector<std::string> tags;
    for (const auto& t : img.value("RepoTags", nlohmann::json::array()))
      if (t.is_string() && t.get<std::string>() != "<none>:<none>") tags.push_back(t.get<std::string>());
    if (sub == "prune") {
      bool all = true;
      for (const auto& t : tags) {
        auto st = engine->RemoveImage(t);
        if (!st.ok()) {
          all = false;
          std::fprintf(stderr, "llm-sandbox image: kept %s: %s\n", t.c_str(), st.error().message.c_str());
        }
      }
      (all ? removed : kept) += 1;
      continue;
    }
    const std::string name = tags.empty() ? img.value("Id", std::string()) : tags.front();
    const uint64_t size = img.value("Size", uint64_t{0});
    if (as_json) {
      out.push_back({{"reference", name}, {"id", img.value("Id", "")}, {"size", size},
                     {"policy", ImageLabel(img, docker::kLabelPolicy)},
                     {"key", ImageLabel(img, docker::kLabelBuildKey)},
                     {"step", ImageLabel(img, docker::kLabelBuildStep)},
                     {"base", ImageLabel(img, docker::kLabelBuildBase)}});
    } else {
      std::printf("%-60s %10s  %-20s  %s\n", name.c_str(), units::FormatBytes(size).c_str(),
                  ImageLabel(img, docker::kLabelPolicy).c_str(), ImageLabel(img, docker::kLabelBuildStep).c_str());
    }
  }
  if (sub == "prune") {
    std::printf("removed %d built images from the Docker engine, kept %d in use\n", removed, kept);
  } else if (as_json) {
    std::printf("%s\n", out.dump(2).c_str());
  }
  return 0;
}

}  // namespace lsb::cli
