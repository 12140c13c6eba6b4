#include "runtime/image_map.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include <yaml-cpp/yaml.h>

#include "base/io.h"
#include "policy/bounded_yaml.h"

namespace lsb {
namespace {

constexpr const char* kEtcImages = "/etc/llm-sandbox/images.yaml";

std::string Pos(const std::string& file, const YAML::Mark& m) {
  return file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

}  // namespace

std::vector<std::string> ImageMap::SearchPath(const std::string& explicit_file) {
  std::vector<std::string> out;
  if (!explicit_file.empty()) out.push_back(explicit_file);
  if (const char* env = std::getenv("LLM_SANDBOX_IMAGES"); env && *env) out.emplace_back(env);
  out.emplace_back(kEtcImages);
  return out;
}

Result<ImageMap> ImageMap::Parse(std::string_view yaml_text, const std::string& file_name) {
  ImageMap map;
  map.source_ = file_name;
  auto loaded = LoadBoundedYaml(yaml_text, file_name);
  if (!loaded.ok()) return loaded.error();
  const YAML::Node root = *loaded;
  if (!root || root.IsNull()) return map;
  // A key or value of the wrong kind (a list as an image name) is a conversion error, not a crash.
  try {
    if (!root.IsMap()) return Error{Pos(file_name, root.Mark()) + ": expected a mapping with key 'images'"};
    for (const auto& top : root) {
      std::string key = top.first.as<std::string>();
      if (key == "docker") continue;  // the Docker backend's section (runtime/docker/image_resolver.h)
      if (key != "images")
        return Error{Pos(file_name, top.first.Mark()) + ": unknown key '" + key +
                     "' (the only key is 'images')"};
      const YAML::Node& images = top.second;
      if (images.IsNull()) continue;
      if (!images.IsMap())
        return Error{Pos(file_name, images.Mark()) +
                     ": 'images' must map image names to 'host' or a rootfs directory"};
      for (const auto& e : images) {
        if (!e.second.IsScalar())
          return Error{Pos(file_name, e.second.Mark()) +
                       ": the rootfs of an image is 'host' or an absolute directory path"};
        std::string name = e.first.as<std::string>();
        std::string rootfs = e.second.as<std::string>();
        if (rootfs != "host" && (rootfs.empty() || rootfs[0] != '/'))
          return Error{Pos(file_name, e.second.Mark()) + ": rootfs '" + rootfs + "' of image '" + name +
                       "' must be 'host' or an absolute directory path"};
        if (map.images_.count(name))
          return Error{Pos(file_name, e.first.Mark()) + ": image '" + name + "' is mapped twice"};
        map.images_[name] = rootfs;
      }
    }
  } catch (const YAML::Exception& e) {
    return Error{Pos(file_name, e.mark) + ": " + e.msg};
  }
  return map;
}

ImageMap::Choice ImageMap::Choose(const std::string& explicit_file) {
  const char* env = std::getenv("LLM_SANDBOX_IMAGES");
  Choice c;
  auto note = [&](const std::string& s) { c.searched += (c.searched.empty() ? "" : ", ") + s; };
  if (!explicit_file.empty()) {
    c.file = explicit_file;
    note(explicit_file + " (--images)");
  } else {
    note("--images (not given)");
    if (env && *env) {
      c.file = env;
      note(std::string(env) + " ($LLM_SANDBOX_IMAGES)");
    } else {
      note("$LLM_SANDBOX_IMAGES (unset)");
      if (::access(kEtcImages, F_OK) == 0) c.file = kEtcImages;
      note(std::string(kEtcImages) + (c.file.empty() ? " (absent)" : ""));
    }
  }
  return c;
}

Result<ImageMap> ImageMap::LoadChoice(const Choice& choice) {
  if (choice.file.empty()) {
    ImageMap empty;
    empty.searched_ = choice.searched;
    return empty;
  }
  auto text = ReadFile(choice.file);
  if (!text.ok()) return text.error().Wrap("image map");
  auto map = Parse(*text, choice.file);
  if (!map.ok()) return map.error().Wrap("image map");
  map->searched_ = choice.searched;
  return map;
}

Result<ImageMap> ImageMap::Load(const std::string& explicit_file) { return LoadChoice(Choose(explicit_file)); }

Result<std::string> ImageMap::Resolve(const std::string& image) const {
  if (image == "host") return std::string("host");
  auto it = images_.find(image);
  if (it == images_.end()) {
    return Error{"image '" + image + "' has no rootfs mapping for the native backend; searched: " +
                 (searched_.empty() ? source_ : searched_) +
                 ". Add a line under 'images:' in one of these files, e.g.\n  images:\n    \"" + image +
                 "\": host            # run on the host's system directories, read-only\n" +
                 "or map it to an unpacked root filesystem directory (see config/images.yaml)"};
  }
  const std::string& rootfs = it->second;
  if (rootfs != "host") {
    struct stat st {};
    if (::stat(rootfs.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return Error{"container.image '" + image + "' maps to " + rootfs + " (in " + source_ +
                   "), which is not a directory"};
  }
  return rootfs;
}

}  // namespace lsb
