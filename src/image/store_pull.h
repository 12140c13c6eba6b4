// A pull into the image store (docs/images.md "Pulls into the store"), for `image pull` and the
// backends' puller: the registry client writes an OCI layout in the store's tmp/, then the store
// imports it (blobs are moved in, verified again). What makes it safe to kill and to run twice:
//   - the layout is the image's resumable pull dir (Store::PullDirFor), locked for the whole
//     download: a second pull of the same image into the same store waits, then finds every blob
//     present and downloads none. The store lock is taken only for the import (seconds), so pulls
//     of other images, imports, ls and inspect never wait for a download;
//   - blobs the store already has are hard-linked into the layout (PullOptions::reuse_blobs_dir),
//     not downloaded (a shared base layer; the blobs a pull killed in its import had moved in);
//   - a killed or failed download leaves its verified blobs and `.partial` files in that dir, kept
//     by every clean-up but `image prune`; the next pull verifies and resumes them.
#pragma once

#include "base/result.h"
#include "image/image_root.h"
#include "image/reference.h"
#include "image/registry_client.h"
#include "image/store.h"

namespace lsb::image {

struct StorePull {
  PulledImage pulled;
  ImageRoot root;
};

Result<StorePull> PullIntoStore(Store& store, const ImageReference& ref, PullOptions opts);

}  // namespace lsb::image
