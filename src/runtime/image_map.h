// container.image -> a root filesystem for backends that have no image store (native). The map is
// an explicit operator file, never a guess: an image without an entry is an error that names the
// image, the files searched and how to add a mapping.
//
//   images:
//     "python:3.12-slim": host          # the host's system directories, read-only
//     "alpine:3": /srv/rootfs/alpine    # an unpacked root filesystem directory
//     "python:3.11-slim": "127.0.0.1:5000/python:3.11-slim"   # an alias: that image, from the store
//     "app:1":                          # unpacked layers in overlayfs format, lowest first
//       layers: [/srv/layers/base, /srv/layers/app]
//       env: ["PATH=/usr/local/bin:/usr/bin:/bin"]   # optional, as an image config's Env
//       workdir: /app                                # optional, as its WorkingDir
//
// The image "host" needs no entry. An alias is resolved once: its target is looked up in the image
// store, never in this map again (a target that this file maps too is refused), so there are no
// chains and no loops.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "image/image_root.h"

namespace lsb {

class ImageMap {
 public:
  // The files looked at, in order: `explicit_file` (--images), $LLM_SANDBOX_IMAGES,
  // /etc/llm-sandbox/images.yaml. The first one given (explicit, env) or existing (/etc) is used;
  // files are not merged.
  static std::vector<std::string> SearchPath(const std::string& explicit_file);
  // Loads per SearchPath(). A file named explicitly (flag or env) must exist; when none is found
  // the map is empty (only "host" resolves).
  static Result<ImageMap> Load(const std::string& explicit_file = "");
  // The file Load would read now ("" when none), and what was looked at, for messages.
  struct Choice {
    std::string file;
    std::string searched;
  };
  static Choice Choose(const std::string& explicit_file);
  // Reads and parses the chosen file (an empty map when none was chosen).
  static Result<ImageMap> LoadChoice(const Choice& choice);
  static Result<ImageMap> Parse(std::string_view yaml_text, const std::string& file_name);

  // "host" or an absolute directory path (an alias is an error: the image store resolves it).
  Result<std::string> Resolve(const std::string& image) const;

  // One entry of the map, as the native backend resolves it (runtime/native/box_root.h).
  struct Entry {
    enum class Kind { kHost, kDirectory, kAlias, kLayers } kind = Kind::kHost;
    std::string value;        // kDirectory: the path; kAlias: the target reference as written
    image::ImageRoot layers;  // kLayers: the operator's unpacked layers and config
  };
  // The entry for `image` ("host" always has one); nullopt when the map has none.
  std::optional<Entry> Find(const std::string& image) const;
  // What was looked at, for messages ("--images (not given), ..., /etc/... (absent)").
  const std::string& searched() const { return searched_.empty() ? source_ : searched_; }

  const std::map<std::string, std::string>& entries() const { return images_; }
  const std::string& source() const { return source_; }  // the file loaded, "" if none

 private:
  std::map<std::string, std::string> images_;
  std::map<std::string, image::ImageRoot> layered_;
  std::string source_;
  std::string searched_;  // for error messages: what was looked at and what was found
};

}  // namespace lsb
