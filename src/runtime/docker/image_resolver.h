// A policy's container.image -> an image in the engine's store. The mapping is explicit and
// documented (docs/docker.md): a `docker:` section in the image map file (--images,
// $LLM_SANDBOX_IMAGES, /etc/llm-sandbox/images.yaml), or $LLM_SANDBOX_DOCKER_IMAGES
// ("python:3.12-slim=llm-sandbox/python:3.11-test,..."), which wins. An unmapped name is used as is.
// A missing image is pulled (progress on stderr); where no registry answers, the error names the
// image and the ways to provide it.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "base/result.h"
#include "runtime/docker/engine_client.h"

namespace lsb::docker {

class ImageResolver {
 public:
  // Reads the `docker:` section of a YAML image map file (other sections are not ours to check).
  static Result<std::map<std::string, std::string>> ParseDockerSection(std::string_view yaml_text,
                                                                       const std::string& file_name);
  // "a=b,c=d"
  static Result<std::map<std::string, std::string>> ParseEnv(std::string_view text);
  // From the image map file (explicit, else env, else /etc) and $LLM_SANDBOX_DOCKER_IMAGES.
  static Result<ImageResolver> Load(const std::string& explicit_file = "");

  void Set(const std::string& from, const std::string& to) { map_[from] = to; }
  std::string Map(const std::string& image) const;
  // Map, then make sure the engine has it (pulling it if needed).
  Result<std::string> Ensure(const EngineClient& engine, const std::string& image,
                             const std::function<void(const std::string&)>& progress = nullptr) const;
  const std::map<std::string, std::string>& entries() const { return map_; }

 private:
  std::map<std::string, std::string> map_;
  std::string source_;
};

}  // namespace lsb::docker
