// Looking at an image's files from the host without mounting it: the merged view of its layers as
// overlayfs shows it (upper layers win, 0:0 character devices hide, opaque directories stop the
// search), with symlinks resolved inside the image, never on the host. Each layer is walked with
// O_NOFOLLOW one component at a time. `image inspect` uses it to find interpreters and os-release.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/result.h"
#include "image/image_root.h"

namespace lsb::image {

struct ImageFile {
  std::string image_path;  // the path asked for
  std::string resolved;    // after symlinks, inside the image ("/usr/local/bin/python3.11")
  std::string layer_dir;   // the layer that provides it
  bool executable = false;
};

// kNotFound when the merged view has no regular file at `path`.
Result<ImageFile> FindInImage(const std::vector<std::string>& layers, const std::string& path);
Result<std::string> ReadImageFile(const std::vector<std::string>& layers, const std::string& path, size_t max_bytes);

// The image's PATH (from its config's Env, else Docker's default PATH).
std::vector<std::string> ImagePath(const ImageConfig& config);
// Which of python3, node, bash, sh the image has on its PATH, each with where it resolves to.
std::map<std::string, ImageFile> FindInterpreters(const ImageRoot& root);

}  // namespace lsb::image
