// Where an import reads blobs from (an OCI layout, an unpacked `docker save` archive): private to
// the store's import code.
#pragma once

#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "image/blob_store.h"
#include "image/oci_json.h"
#include "image/store.h"

namespace lsb::image {

class Store::BlobSource {
 public:
  virtual ~BlobSource() = default;
  virtual Result<UniqueFd> Open(const std::string& digest) = 0;
  // Puts the blob `d` into `blobs`, verified (copied, or moved when the source is ours).
  virtual Status AddTo(BlobStore& blobs, const Descriptor& d, int tmp_fd) = 0;
};

// Opens `rel` below `root` as a regular file, resolving symlinks only inside `root`
// (openat2 RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV).
Result<UniqueFd> OpenRegularInRoot(int root, const std::string& rel);
// The whole of a small file, at most `max_bytes`.
Result<std::string> ReadSmallFd(int fd, size_t max_bytes, const std::string& what);

}  // namespace lsb::image
