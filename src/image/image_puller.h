// How a backend fetches an image it does not have, when the policy lets it (container.pull): the
// registry client, given by the CLI or daemon that has one. The native backend decides whether to
// call it (src/runtime/native/box_root.h); Pull only fetches. Implementations are thread-safe (a
// daemon starts boxes from several threads) and make a second Pull of an image already being
// pulled wait for the first rather than download it twice.
#pragma once

#include "base/result.h"
#include "image/reference.h"

namespace lsb::image {

class ImagePuller {
 public:
  virtual ~ImagePuller() = default;
  // Fetches `ref` into the store the backend's ImageSource reads: ok when, after it, the image is
  // stored (for `always`: its newest manifest for the tag).
  virtual Status Pull(const ImageReference& ref) = 0;
};

}  // namespace lsb::image
