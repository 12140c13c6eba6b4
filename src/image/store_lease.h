// The mark a running box leaves on the stored image it runs on, so the store never removes it
// under the box (docs/images.md "Images in use"). A box built from layers that all lie in one
// image store (<store>/layers/sha256/<diff_id hex>) holds a shared flock on
// <store>/meta/inuse/<chain id> for as long as it lives; the chain id hashes the layer list,
// lowest first, and the file holds that list. The store (its writers hold the store lock) treats
// a chain whose file it cannot lock exclusively as in use: `image rm` of its image is refused, the
// cache bound never evicts it, and GC keeps its layers even when no index entry names them any
// more (a tag re-pulled while a box still runs on its old layers). A killed box's lock goes with
// its last process, so nothing needs cleaning up after a crash.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace lsb::image {

inline constexpr const char* kInUseDir = "meta/inuse";

// The chain id of layers given by their diff_id hex digests, lowest first.
std::string LayerChainId(const std::vector<std::string>& diff_hexes);

class ImageLease {
 public:
  ImageLease() = default;
  // Takes the lease for a box on `layer_dirs` (absolute, lowest first). Layers outside an image
  // store (an image map's own directories) need none: an empty lease, ok.
  static Result<ImageLease> Take(const std::vector<std::string>& layer_dirs);
  bool held() const { return fd_.valid(); }
  const std::string& chain_id() const { return chain_; }

 private:
  UniqueFd fd_;  // the shared flock is the open file description's
  std::string chain_;
};

// For the store (store lock held): every chain some box holds, with its layers' hex digests.
// Files no one holds any more are removed on the way.
Result<std::map<std::string, std::vector<std::string>>> HeldChains(int inuse_dir_fd);

}  // namespace lsb::image
