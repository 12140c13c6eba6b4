#include "runtime/docker/image_resolver.h"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "base/io.h"
#include "policy/bounded_yaml.h"
#include "runtime/docker/http_codec.h"

namespace lsb::docker {

Result<std::map<std::string, std::string>> ImageResolver::ParseDockerSection(std::string_view yaml_text,
                                                                              const std::string& file_name) {
  std::map<std::string, std::string> out;
  auto loaded = LoadBoundedYaml(yaml_text, file_name);
  if (!loaded.ok()) return loaded.error();
  const YAML::Node root = *loaded;
  // A key of the wrong kind (a list as an image name) is a conversion error, not a crash.
  try {
    if (!root || !root.IsMap() || !root["docker"]) return out;
    const YAML::Node docker = root["docker"];
    if (docker.IsNull()) return out;
    auto pos = [&](const YAML::Node& n) {
      return file_name + ":" + std::to_string(n.Mark().line + 1) + ":" + std::to_string(n.Mark().column + 1);
    };
    if (!docker.IsMap()) return Error{pos(docker) + ": 'docker' must map policy image names to engine images"};
    for (auto it = docker.begin(); it != docker.end(); ++it) {
      if (!it->second.IsScalar() || it->second.as<std::string>().empty())
        return Error{pos(it->second) + ": the engine image for '" + it->first.as<std::string>() + "' must be a name"};
      out[it->first.as<std::string>()] = it->second.as<std::string>();
    }
  } catch (const YAML::Exception& e) {
    return Error{file_name + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) + ": " +
                 e.msg};
  }
  return out;
}

Result<std::map<std::string, std::string>> ImageResolver::ParseEnv(std::string_view text) {
  std::map<std::string, std::string> out;
  std::string item;
  std::istringstream in{std::string(text)};
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      return Error{"$LLM_SANDBOX_DOCKER_IMAGES: '" + item + "' is not IMAGE=ENGINE_IMAGE"};
    out[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return out;
}

Result<ImageResolver> ImageResolver::Load(const std::string& explicit_file) {
  ImageResolver r;
  std::string file = explicit_file;
  if (file.empty()) {
    if (const char* env = std::getenv("LLM_SANDBOX_IMAGES"); env && *env) file = env;
  }
  if (file.empty() && ::access("/etc/llm-sandbox/images.yaml", F_OK) == 0) file = "/etc/llm-sandbox/images.yaml";
  if (!file.empty()) {
    auto text = ReadFile(file);
    if (!text.ok()) return text.error().Wrap("image map");
    LSB_ASSIGN_OR_RETURN(r.map_, ParseDockerSection(*text, file));
    r.source_ = file;
  }
  if (const char* env = std::getenv("LLM_SANDBOX_DOCKER_IMAGES"); env && *env) {
    LSB_ASSIGN_OR_RETURN(auto extra, ParseEnv(env));
    for (auto& [k, v] : extra) r.map_[k] = v;
  }
  return r;
}

std::string ImageResolver::Map(const std::string& image) const {
  auto it = map_.find(image);
  return it == map_.end() ? image : it->second;
}

Result<std::string> ImageResolver::Ensure(const EngineClient& engine, const std::string& image,
                                          const std::function<void(const std::string&)>& progress) const {
  std::string target = Map(image);
  LSB_ASSIGN_OR_RETURN(bool have, engine.ImageExists(target));
  if (have) return target;
  std::string how = "provide it: build or load it into the engine (scripts/build-test-image.sh builds "
                    "llm-sandbox/python:3.11-test; `docker load`/`docker import` a tarball), or map '" +
                    image + "' to a local image under 'docker:' in the image map (" +
                    (source_.empty() ? std::string("--images, $LLM_SANDBOX_IMAGES or /etc/llm-sandbox/images.yaml")
                                     : source_) +
                    ") or in $LLM_SANDBOX_DOCKER_IMAGES; see docs/docker.md";
  std::string named = "image '" + target + "'" + (target != image ? " (container.image '" + image + "')" : "");
  // Pull: fromImage=name&tag=tag. The answer streams JSON progress lines; errors come in-band.
  std::string repo = target, tag = "latest";
  size_t colon = target.rfind(':');
  if (colon != std::string::npos && target.find('/', colon) == std::string::npos) {
    repo = target.substr(0, colon);
    tag = target.substr(colon + 1);
  }
  if (progress) progress("pulling " + target + " ...");
  auto resp = engine.Call("POST", "/images/create?fromImage=" + UrlEncode(repo) + "&tag=" + UrlEncode(tag), "",
                          std::chrono::minutes(10));
  if (!resp.ok()) return Error{named + " is not in the engine and pulling it failed: " + resp.error().message + "; " + how};
  std::string pull_error;
  if (resp->status / 100 != 2) {
    ParsedJson j = ParseEngineJson(resp->body);
    pull_error = j.ok() ? JsonStringOr(*j, "message", resp->body) : resp->body;
  }
  std::istringstream lines(resp->body);
  std::string line;
  while (pull_error.empty() && std::getline(lines, line)) {
    ParsedJson j = ParseEngineJson(line);
    if (!j.ok() || !j->is_object()) continue;
    if (j->contains("error")) pull_error = JsonStringOr(*j, "error", "pull failed");
    else if (progress && j->contains("status"))
      progress(JsonStringOr(*j, "status", "") + " " + JsonStringOr(*j, "progress", ""));
  }
  if (!pull_error.empty()) return Error{named + " is not in the engine and pulling it failed (" + pull_error + "); " + how};
  LSB_ASSIGN_OR_RETURN(have, engine.ImageExists(target));
  if (!have) return Error{named + " is still missing after a pull; " + how};
  return target;
}

}  // namespace lsb::docker
