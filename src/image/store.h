// The image store: a directory owned by llm-sandbox (docs/images.md). Its root is itself an OCI
// image layout, so `skopeo copy oci:<store>:<ref>` reads it:
//   oci-layout, index.json        one entry per stored image, ref.name = its canonical reference
//   blobs/sha256/<hex>             manifests, configs, layer blobs, each verified against its digest
//   layers/sha256/<diff_id hex>/   unpacked layers, keyed by the diff_id computed while unpacking
//   meta/                          what the store knows about them (layer sizes, blob -> diff_id,
//                                  last use), rebuilt or ignored when missing
//   meta/inuse/<chain id>          flock'd (shared) by every running box on an image (store_lease.h)
//   tmp/                           in-progress work; whatever a killed job left is removed later
//   lock                           flock'd by every writer (store_lock.h)
// Order of every write: blobs, then layers, then index.json, each by rename: a killed import
// leaves only unreferenced content (removed by prune) and never an index entry naming a missing
// layer. Store implements ImageSource: Resolve is what the native backend calls.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "image/blob_store.h"
#include "image/image_source.h"
#include "image/limits.h"
#include "image/oci_json.h"
#include "image/store_lock.h"

namespace lsb::image {

// $LLM_SANDBOX_IMAGE_STORE, else <DefaultStateDir()>/images; "" when neither applies.
std::string DefaultStoreDir();
inline constexpr uint64_t kDefaultStoreMaxBytes = 20ull << 30;
// $LLM_SANDBOX_IMAGE_STORE_MAX ("20G", "500M", bytes; 0 = unbounded), else kDefaultStoreMaxBytes.
Result<uint64_t> DefaultStoreMaxBytes();
// `--max-store-bytes` when given (the same forms), else DefaultStoreMaxBytes().
Result<uint64_t> StoreMaxBytes(const std::string& flag_value);

struct StoreOptions {
  std::string root;                         // the store directory (created if missing)
  uint64_t max_bytes = kDefaultStoreMaxBytes;  // 0: no bound
  ImageLimits limits;
};

struct StoredImage {  // one index.json entry
  std::string reference;        // canonical
  std::string manifest_digest;
  std::string media_type;
  uint64_t manifest_size = 0;
  std::string os, architecture;
  std::string imported;         // RFC 3339, when it was imported
};

struct LayerInfo {
  std::string blob_digest, diff_id, media_type;
  uint64_t compressed_bytes = 0;  // the blob
  uint64_t unpacked_bytes = 0;    // file content of the unpacked layer
  uint64_t entries = 0;
  std::string dir;
};

struct ImageInfo {
  StoredImage entry;
  std::string config_digest, created;
  ImageConfig config;
  std::vector<LayerInfo> layers;
  uint64_t compressed_bytes = 0, unpacked_bytes = 0;
};

struct PruneReport {
  int blobs_removed = 0, layers_removed = 0, temp_removed = 0, images_evicted = 0;
  uint64_t bytes_freed = 0;
};

class Store : public ImageSource {
 public:
  static Result<std::unique_ptr<Store>> Open(StoreOptions options);

  // Imports the image `name` from an OCI image layout directory: its index's entry whose ref.name
  // is name's tag or canonical form, or its only entry; an index / manifest list there picks
  // linux/<host arch>. When `layout_dir` is a TempDir of this store, blobs are moved, not copied.
  Result<ImageRoot> ImportOciLayout(const std::string& layout_dir, const ImageReference& name);
  // Imports every image of a `docker save` archive (the classic layout and Docker 25+'s OCI one),
  // under its RepoTags, or under `name` when given (then the archive must hold one image).
  Result<std::vector<ImageRoot>> ImportDockerArchive(const std::string& path, const std::optional<ImageReference>& name);

  Result<ImageRoot> Resolve(const ImageReference& ref) const override;
  Result<std::vector<StoredImage>> List() const;
  Result<ImageInfo> Inspect(const ImageReference& ref) const;
  // Removes the image's index entry, then what no other image uses.
  Result<PruneReport> Remove(const ImageReference& ref);
  // Removes unreferenced blobs and layers and what killed jobs left in tmp/.
  Result<PruneReport> Prune();
  // Bytes the store holds (blobs + unpacked layers), from its metadata.
  Result<uint64_t> UsedBytes() const;

  // For the registry client: scratch space on the store's file system (pass its path to
  // ImportOciLayout to have blobs moved in), a blob check to skip downloads, and the store lock
  // to hold while downloading so concurrent pulls of one image fetch once.
  Result<TempDir> NewTempDir(std::string_view purpose) const;
  // A pull's working directory for `ref` (store_puller.h PullIntoStore): tmp/resume-<hash of its reference>, locked
  // while this process holds it. A second pull of the same image waits here; a killed pull's
  // verified blobs and partial downloads stay there for the next one. Other images do not wait.
  Result<TempDir> PullDirFor(const ImageReference& ref) const;
  bool HasBlob(const std::string& digest) const { return blobs_.Has(digest); }
  Result<FileLock> LockForWrite() const;

  const std::string& root() const { return opts_.root; }
  const ImageLimits& limits() const { return opts_.limits; }

 private:
  class BlobSource;
  class LayoutSource;
  class ArchiveSource;

  explicit Store(StoreOptions o) : opts_(std::move(o)) {}
  Status Init();
  Result<std::vector<StoredImage>> ReadIndex() const;
  Status WriteIndex(const std::vector<StoredImage>& entries);
  Result<const StoredImage*> Find(const std::vector<StoredImage>& entries, const ImageReference& ref) const;
  Result<ImageRoot> RootOf(const StoredImage& e, ImageInfo* info) const;

  // Import steps (store_import.cc), with the store lock held.
  Result<ImageRoot> ImportFrom(BlobSource& src, const Descriptor& top, const ImageReference& name);
  Result<Descriptor> ResolveToManifest(BlobSource& src, Descriptor d, std::string* manifest_json);
  Status EnsureLayer(const Descriptor& layer, const std::string& claimed_diff_id, size_t index);
  Status Commit(const StoredImage& entry);
  // GC (store_gc.cc), with the store lock held. Resumable pulls' temp dirs go only with
  // `resumable_too` (image prune); rm and the cache bound leave them for the next pull.
  Result<PruneReport> CollectGarbage(bool resumable_too = false);
  Result<PruneReport> EnforceBound(const std::string& keep_reference);

  std::string Path(std::string_view rel) const { return opts_.root + "/" + std::string(rel); }

  StoreOptions opts_;
  // Whether a running box holds the image (store_lease.h); with the store lock held.
  Result<bool> InUse(const ImageInfo& info) const;

  UniqueFd root_fd_, layers_fd_, meta_layers_fd_, meta_blobs_fd_, meta_used_fd_, meta_inuse_fd_;
  BlobStore blobs_;
};

}  // namespace lsb::image
