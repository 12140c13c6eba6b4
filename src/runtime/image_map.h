// container.image -> a root filesystem for backends that have no image store (native). The map is
// an explicit operator file, never a guess: an image without an entry is an error that names the
// image, the files searched and how to add a mapping.
//
//   images:
//     "python:3.12-slim": host          # the host's system directories, read-only
//     "alpine:3": /srv/rootfs/alpine    # an unpacked root filesystem directory
//
// The image "host" needs no entry.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

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

  // "host" or an absolute directory path.
  Result<std::string> Resolve(const std::string& image) const;

  const std::map<std::string, std::string>& entries() const { return images_; }
  const std::string& source() const { return source_; }  // the file loaded, "" if none

 private:
  std::map<std::string, std::string> images_;
  std::string source_;
  std::string searched_;  // for error messages: what was looked at and what was found
};

}  // namespace lsb
