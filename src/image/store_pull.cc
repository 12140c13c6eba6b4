#include "image/store_pull.h"

namespace lsb::image {

Result<StorePull> PullIntoStore(Store& store, const ImageReference& ref, PullOptions opts) {
  // Waits while another process pulls this image into this store (its own per-image lock).
  LSB_ASSIGN_OR_RETURN(TempDir dir, store.PullDirFor(ref));
  // Blobs the store has are hard-linked into the layout, verified, and not downloaded again.
  if (opts.reuse_blobs_dir.empty()) opts.reuse_blobs_dir = store.root() + "/blobs/sha256";
  auto pulled = PullToLayout(ref, dir.path(), opts);
  if (!pulled.ok()) {
    dir.Keep();  // what was verified, and the partial blobs, for the next pull to resume
    return pulled.error();
  }
  auto root = store.ImportOciLayout(dir.path(), ref);
  if (!root.ok()) return root.error().Wrap("into the store " + store.root());
  // Success: `dir` is removed as it goes out of scope; its blobs now live in the store.
  return StorePull{std::move(pulled).value(), std::move(root).value()};
}

}  // namespace lsb::image
