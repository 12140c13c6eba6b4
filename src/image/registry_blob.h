// One blob from a registry into <blobs_dir>/<hex>, verified while it streams: bytes go to
// <hex>.partial and through SHA-256; never more than the manifest declared is read; only a blob
// whose size and digest match is renamed into place (rename is atomic: a blob file is either
// absent or verified). A broken transfer is retried with backoff and resumed with `Range` from
// what the partial file holds; a mismatch deletes the partial and fails, naming the digest.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "base/result.h"
#include "image/registry_manifest.h"
#include "image/registry_session.h"

namespace lsb::image::registry {

struct BlobTransfer {
  uint64_t downloaded = 0;  // bytes received in this run
  uint64_t reused = 0;      // bytes already there (a whole blob, or a partial resumed)
};

// Called with the bytes of the blob on disk so far (for the progress display).
using BlobProgressFn = std::function<void(uint64_t have)>;

// Fetches `d` from the session's endpoints, starting with `first_endpoint` (the one that served
// the manifest). `cancelled` is polled between reads: another download failed.
Result<BlobTransfer> DownloadBlob(RegistrySession& session, HttpClient& http, size_t first_endpoint,
                                  const Descriptor& d, const std::string& blobs_dir, const PullOptions& opts,
                                  const BlobProgressFn& progress, const std::atomic<bool>& cancelled);

// Whether `path` holds exactly the blob `d` (size, then digest); a wrong file is removed.
Result<bool> VerifiedBlobPresent(const std::string& path, const Descriptor& d);

}  // namespace lsb::image::registry
