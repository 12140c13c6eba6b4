// What a native box's root is built from, for container.image (docs/policy.md "Image resolution"):
//   1. the image map (runtime/image_map.h): "host", a rootfs directory, or an alias naming another
//      image, which goes to step 2 under that name (once: the map is not read again);
//   2. the image store, through the ImageSource the backend was given: the image's layers and
//      config (image/image_root.h);
//   3. not stored: container.pull decides. "missing" (the default) pulls it through the
//      ImagePuller the backend was given, "never" is an error, "always" pulls before every
//      resolution (a registry's newer manifest for the tag wins);
//   else an error naming the image, the map files searched and `llm-sandbox image pull|import`.
// Pure over its inputs (the store and puller are interfaces), so the order is unit-tested.
#pragma once

#include <optional>
#include <string>

#include "base/result.h"
#include "image/image_puller.h"
#include "image/image_root.h"
#include "image/image_source.h"
#include "runtime/image_map.h"

namespace lsb::native {

struct BoxRoot {
  std::string rootfs;                    // "host", an absolute directory, or "image"
  std::optional<image::ImageRoot> image; // rootfs "image": the stored image (unset while a pull is pending)
  bool pull_pending = false;             // Explain only: not stored, the first run pulls it
  std::string how;                       // one line for `policy explain`
};

struct RootSources {
  const ImageMap& map;
  const image::ImageSource* store = nullptr;  // nullptr: no image store here
  image::ImagePuller* puller = nullptr;       // nullptr: no registry client here
};

// `pull` is the policy's container.pull ("missing" | "always" | "never"). With `may_pull` false
// (Explain, Check) nothing is fetched: a missing image that would be pulled is `pull_pending`.
Result<BoxRoot> ResolveBoxRoot(const std::string& image, const std::string& pull, const RootSources& sources,
                               bool may_pull);

}  // namespace lsb::native
