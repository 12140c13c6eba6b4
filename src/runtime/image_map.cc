#include "runtime/image_map.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include <yaml-cpp/yaml.h>

#include "base/io.h"
#include "image/reference.h"
#include "policy/bounded_yaml.h"

namespace lsb {
namespace {

constexpr const char* kEtcImages = "/etc/llm-sandbox/images.yaml";

std::string Pos(const std::string& file, const YAML::Mark& m) {
  return file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

// `name: {layers: [lowest, ..., top], env: ["K=V", ...], workdir: /dir}`: unpacked layers in
// overlayfs format the operator keeps (a build's output, another tool's unpacked layers).
Result<image::ImageRoot> ParseLayered(const YAML::Node& node, const std::string& name, const std::string& file) {
  image::ImageRoot root;
  root.reference = name;
  auto scalars = [&](const YAML::Node& list, const std::string& key) -> Result<std::vector<std::string>> {
    if (!list.IsSequence()) return Error{Pos(file, list.Mark()) + ": '" + key + "' of image '" + name + "' must be a list"};
    std::vector<std::string> out;
    for (const auto& item : list) {
      if (!item.IsScalar()) return Error{Pos(file, item.Mark()) + ": '" + key + "' of image '" + name + "' lists strings"};
      out.push_back(item.as<std::string>());
    }
    return out;
  };
  for (const auto& kv : node) {
    std::string key = kv.first.as<std::string>();
    if (key == "layers") {
      LSB_ASSIGN_OR_RETURN(root.layers, scalars(kv.second, key));
      for (const auto& l : root.layers)
        if (l.empty() || l[0] != '/')
          return Error{Pos(file, kv.second.Mark()) + ": layer '" + l + "' of image '" + name + "' must be an absolute directory"};
    } else if (key == "env") {
      LSB_ASSIGN_OR_RETURN(root.config.env, scalars(kv.second, key));
      for (const auto& e : root.config.env)
        if (e.find('=') == std::string::npos || e[0] == '=')
          return Error{Pos(file, kv.second.Mark()) + ": env entry '" + e + "' of image '" + name + "' must be KEY=VALUE"};
    } else if (key == "workdir") {
      root.config.working_dir = kv.second.as<std::string>();
      if (root.config.working_dir.empty() || root.config.working_dir[0] != '/')
        return Error{Pos(file, kv.second.Mark()) + ": workdir of image '" + name + "' must be an absolute path"};
    } else {
      return Error{Pos(file, kv.first.Mark()) + ": unknown key '" + key + "' for image '" + name +
                   "' (layers, env, workdir)"};
    }
  }
  if (root.layers.empty())
    return Error{Pos(file, node.Mark()) + ": image '" + name + "' needs 'layers: [lowest, ..., top]'"};
  return root;
}

// Whether two names reach the same image: equal as written, or as canonical references.
bool SameImage(const std::string& a, const std::string& b) {
  if (a == b) return true;
  auto ra = image::ParseImageReference(a), rb = image::ParseImageReference(b);
  return ra.ok() && rb.ok() && ra->Canonical() == rb->Canonical();
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
        if (e.second.IsMap()) {
          std::string name = e.first.as<std::string>();
          if (map.images_.count(name) || map.layered_.count(name))
            return Error{Pos(file_name, e.first.Mark()) + ": image '" + name + "' is mapped twice"};
          LSB_ASSIGN_OR_RETURN(map.layered_[name], ParseLayered(e.second, name, file_name));
          continue;
        }
        if (!e.second.IsScalar())
          return Error{Pos(file_name, e.second.Mark()) +
                       ": an image maps to 'host', an absolute directory path, an image to alias, or {layers: [...]}"};
        std::string name = e.first.as<std::string>();
        std::string rootfs = e.second.as<std::string>();
        if (rootfs != "host" && (rootfs.empty() || rootfs[0] != '/')) {
          if (auto ref = image::ParseImageReference(rootfs); !ref.ok())
            return Error{Pos(file_name, e.second.Mark()) + ": '" + rootfs + "' of image '" + name +
                         "' must be 'host', an absolute rootfs directory or an image reference to alias (" +
                         ref.error().message + ")"};
        }
        if (map.images_.count(name) || map.layered_.count(name))
          return Error{Pos(file_name, e.first.Mark()) + ": image '" + name + "' is mapped twice"};
        map.images_[name] = rootfs;
      }
    }
  } catch (const YAML::Exception& e) {
    return Error{Pos(file_name, e.mark) + ": " + e.msg};
  }
  // Aliases resolve once, in the image store: one whose target this file maps too would read as a
  // chain (or a loop) that is never followed.
  std::vector<std::string> names;
  for (const auto& [name, _] : map.images_) names.push_back(name);
  for (const auto& [name, _] : map.layered_) names.push_back(name);
  for (const auto& [name, value] : map.images_) {
    auto entry = map.Find(name);
    if (entry->kind != Entry::Kind::kAlias) continue;
    for (const auto& other : names)
      if (other != name && SameImage(other, value))
        return Error{file_name + ": image '" + name + "' is an alias of '" + value +
                     "', which this file maps too; aliases are resolved once, in the image store (no chains): map '" +
                     name + "' to what '" + other + "' maps to"};
  }
  return map;
}

std::optional<ImageMap::Entry> ImageMap::Find(const std::string& image) const {
  if (image == "host") return Entry{Entry::Kind::kHost, "host", {}};
  if (auto l = layered_.find(image); l != layered_.end()) return Entry{Entry::Kind::kLayers, "", l->second};
  auto it = images_.find(image);
  if (it == images_.end()) return std::nullopt;
  const std::string& v = it->second;
  if (v == "host") return Entry{Entry::Kind::kHost, v, {}};
  if (!v.empty() && v[0] == '/') return Entry{Entry::Kind::kDirectory, v, {}};
  return Entry{Entry::Kind::kAlias, v, {}};
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
  if (rootfs != "host" && rootfs[0] != '/')
    return Error{"container.image '" + image + "' is an alias of '" + rootfs + "' (in " + source_ +
                 "): the image store resolves it"};
  if (rootfs != "host") {
    struct stat st {};
    if (::stat(rootfs.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return Error{"container.image '" + image + "' maps to " + rootfs + " (in " + source_ +
                   "), which is not a directory"};
  }
  return rootfs;
}

}  // namespace lsb
