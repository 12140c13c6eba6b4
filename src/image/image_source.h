// Where the native backend finds a stored image: the image store implements it (Store), tests may
// give a fixed set. Resolve never pulls: pulling is the caller's decision (container.pull).
#pragma once

#include "base/result.h"
#include "image/image_root.h"
#include "image/reference.h"

namespace lsb::image {

class ImageSource {
 public:
  virtual ~ImageSource() = default;
  // The verified, unpacked image `ref` names; kNotFound when it is not stored.
  virtual Result<ImageRoot> Resolve(const ImageReference& ref) const = 0;
};

}  // namespace lsb::image
