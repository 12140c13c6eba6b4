// Garbage collection and the cache bound. Live = every blob and layer an index.json entry reaches
// (its manifest, config, layer blobs, and the config's diff_ids); everything else in blobs/,
// layers/ and meta/ goes, and so does what killed jobs left in tmp/. With the store lock held.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "base/bounded_json.h"
#include "image/safe_fs.h"
#include "image/store.h"
#include "image/store_lease.h"

namespace lsb::image {
namespace {

Result<std::vector<std::string>> ListDir(int dir_fd) {
  UniqueFd dup(::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0));
  if (!dup) return Error::FromErrno("dup");
  DIR* d = ::fdopendir(dup.release());
  if (!d) return Error::FromErrno("opendir");
  ::rewinddir(d);
  std::vector<std::string> out;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != ".." && n[0] != '.') out.push_back(n);
  }
  ::closedir(d);
  return out;
}

void RemoveAtomicWriteLeftovers(int dir_fd) {
  UniqueFd dup(::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0));
  DIR* d = dup ? ::fdopendir(dup.release()) : nullptr;
  if (!d) return;
  ::rewinddir(d);
  std::vector<std::string> stale;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n.size() > 1 && n[0] == '.' && n.find(".tmp-") != std::string::npos) stale.push_back(n);
  }
  for (const auto& n : stale) (void)::unlinkat(::dirfd(d), n.c_str(), 0);
  ::closedir(d);
}

std::string StripSuffix(const std::string& s, const std::string& suffix) {
  if (s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0)
    return s.substr(0, s.size() - suffix.size());
  return s;
}

}  // namespace

Result<uint64_t> Store::UsedBytes() const {
  uint64_t total = 0;
  LSB_ASSIGN_OR_RETURN(auto blobs, ListDir(blobs_.dir_fd()));
  for (const auto& b : blobs) {
    struct stat st {};
    if (::fstatat(blobs_.dir_fd(), b.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) total += static_cast<uint64_t>(st.st_size);
  }
  LSB_ASSIGN_OR_RETURN(auto layers, ListDir(layers_fd_.get()));
  for (const auto& l : layers) {
    auto meta = ReadFileAt(meta_layers_fd_.get(), l + ".json", 4096);
    if (!meta.ok()) continue;
    ParsedJson j = ParseBoundedJson(*meta);
    if (j.ok() && j->is_object()) total += j->value("bytes", uint64_t{0});
  }
  return total;
}

Result<PruneReport> Store::CollectGarbage(bool resumable_too) {
  PruneReport report;
  LSB_ASSIGN_OR_RETURN(auto entries, ReadIndex());
  std::set<std::string> live_blobs, live_layers, live_manifests;  // hex digests
  for (const auto& e : entries) {
    ImageInfo info;
    auto root = RootOf(e, &info);
    live_blobs.insert(BlobStore::Hex(e.manifest_digest));
    live_manifests.insert(BlobStore::Hex(e.manifest_digest));
    if (!info.config_digest.empty()) live_blobs.insert(BlobStore::Hex(info.config_digest));
    for (const auto& l : info.layers) {
      live_blobs.insert(BlobStore::Hex(l.blob_digest));
      live_layers.insert(BlobStore::Hex(l.diff_id));
    }
    // A damaged entry keeps what it still reaches; it is the user's to remove (image rm).
    if (!root.ok() && info.layers.empty()) {
      if (auto m = blobs_.ReadVerified(e.manifest_digest, opts_.limits.max_json_bytes); m.ok())
        if (auto pm = ParseManifest(*m, opts_.limits.max_json_bytes); pm.ok()) {
          live_blobs.insert(BlobStore::Hex(pm->config.digest));
          for (const auto& l : pm->layers) live_blobs.insert(BlobStore::Hex(l.digest));
        }
    }
  }
  // Layers a running box is built from stay, even when no index entry names them any more.
  LSB_ASSIGN_OR_RETURN(auto held, HeldChains(meta_inuse_fd_.get()));
  for (const auto& [chain, hexes] : held) live_layers.insert(hexes.begin(), hexes.end());
  LSB_ASSIGN_OR_RETURN(auto blobs, ListDir(blobs_.dir_fd()));
  for (const auto& b : blobs) {
    if (live_blobs.count(b)) continue;
    struct stat st {};
    if (::fstatat(blobs_.dir_fd(), b.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) report.bytes_freed += static_cast<uint64_t>(st.st_size);
    LSB_TRY(RemoveTree(blobs_.dir_fd(), b));
    (void)::unlinkat(meta_blobs_fd_.get(), b.c_str(), 0);
    ++report.blobs_removed;
  }
  LSB_ASSIGN_OR_RETURN(auto layers, ListDir(layers_fd_.get()));
  for (const auto& l : layers) {
    if (live_layers.count(l)) continue;
    if (auto meta = ReadFileAt(meta_layers_fd_.get(), l + ".json", 4096); meta.ok()) {
      ParsedJson j = ParseBoundedJson(*meta);
      if (j.ok() && j->is_object()) report.bytes_freed += j->value("bytes", uint64_t{0});
    }
    // Renamed into tmp/ first: a removal cut short leaves a stale temp, never half a layer here.
    LSB_ASSIGN_OR_RETURN(TempDir trash, NewTempDir("gc"));
    if (::renameat(layers_fd_.get(), l.c_str(), trash.fd(), "layer") != 0) return Error::FromErrno("move layer " + l);
    ++report.layers_removed;
  }
  // Metadata of what is gone.
  LSB_ASSIGN_OR_RETURN(auto metas, ListDir(meta_layers_fd_.get()));
  for (const auto& m : metas)
    if (!live_layers.count(StripSuffix(m, ".json"))) (void)::unlinkat(meta_layers_fd_.get(), m.c_str(), 0);
  LSB_ASSIGN_OR_RETURN(auto maps, ListDir(meta_blobs_fd_.get()));
  for (const auto& m : maps)
    if (!live_blobs.count(m)) (void)::unlinkat(meta_blobs_fd_.get(), m.c_str(), 0);
  LSB_ASSIGN_OR_RETURN(auto used, ListDir(meta_used_fd_.get()));
  for (const auto& u : used)
    if (!live_manifests.count(u)) (void)::unlinkat(meta_used_fd_.get(), u.c_str(), 0);
  // Temp files of an atomic write cut short (".index.json.tmp-..."): every writer holds the lock.
  for (int dir : {root_fd_.get(), meta_layers_fd_.get(), meta_blobs_fd_.get()}) RemoveAtomicWriteLeftovers(dir);
  LSB_ASSIGN_OR_RETURN(report.temp_removed, CleanStaleTemp(Path("tmp"), /*keep_resumable=*/!resumable_too));
  return report;
}

Result<PruneReport> Store::EnforceBound(const std::string& keep_reference) {
  PruneReport total;
  for (;;) {
    LSB_ASSIGN_OR_RETURN(uint64_t used, UsedBytes());
    if (used <= opts_.max_bytes) break;
    LSB_ASSIGN_OR_RETURN(auto entries, ReadIndex());
    // Oldest last use first (Resolve stamps meta/used/<manifest>), else oldest import.
    auto last_use = [&](const StoredImage& e) -> int64_t {
      struct stat st {};
      if (::fstatat(meta_used_fd_.get(), BlobStore::Hex(e.manifest_digest).c_str(), &st, 0) == 0) return st.st_mtime;
      return 0;
    };
    const StoredImage* victim = nullptr;
    int64_t victim_use = 0;
    for (const auto& e : entries) {
      if (e.reference == keep_reference) continue;
      ImageInfo info;
      if (RootOf(e, &info).ok()) {
        LSB_ASSIGN_OR_RETURN(bool busy, InUse(info));
        if (busy) continue;  // a running box's image is never evicted
      }
      int64_t u = last_use(e);
      if (!victim || u < victim_use || (u == victim_use && e.imported < victim->imported)) {
        victim = &e;
        victim_use = u;
      }
    }
    if (!victim) break;  // only the image just imported and images in use are left: they stay, over the bound
    std::string gone = victim->reference;
    std::vector<StoredImage> next;
    for (auto& e : entries)
      if (e.reference != gone) next.push_back(std::move(e));
    LSB_TRY(WriteIndex(next));
    LSB_ASSIGN_OR_RETURN(PruneReport r, CollectGarbage());
    total.blobs_removed += r.blobs_removed;
    total.layers_removed += r.layers_removed;
    total.bytes_freed += r.bytes_freed;
    ++total.images_evicted;
  }
  return total;
}

Result<PruneReport> Store::Remove(const ImageReference& ref) {
  LSB_ASSIGN_OR_RETURN(FileLock lock, LockForWrite());
  LSB_ASSIGN_OR_RETURN(auto entries, ReadIndex());
  LSB_ASSIGN_OR_RETURN(const StoredImage* e, Find(entries, ref));
  ImageInfo info;
  if (RootOf(*e, &info).ok()) {
    LSB_ASSIGN_OR_RETURN(bool busy, InUse(info));
    if (busy)
      return Error{ErrorCode::kPermissionDenied, "image " + e->reference + " is in use by a running box; stop the box "
                                                 "(or let its run end) and run `llm-sandbox image rm` again"};
  }
  std::string gone = e->reference;
  std::vector<StoredImage> next;
  for (auto& x : entries)
    if (x.reference != gone) next.push_back(std::move(x));
  LSB_TRY(WriteIndex(next));
  return CollectGarbage();
}

Result<bool> Store::InUse(const ImageInfo& info) const {
  std::vector<std::string> hexes;
  for (const auto& l : info.layers) hexes.push_back(BlobStore::Hex(l.diff_id));
  LSB_ASSIGN_OR_RETURN(auto held, HeldChains(meta_inuse_fd_.get()));
  return held.count(LayerChainId(hexes)) > 0;
}

Result<PruneReport> Store::Prune() {
  LSB_ASSIGN_OR_RETURN(FileLock lock, LockForWrite());
  LSB_ASSIGN_OR_RETURN(PruneReport r, CollectGarbage(/*resumable_too=*/true));
  if (opts_.max_bytes > 0) {
    LSB_ASSIGN_OR_RETURN(PruneReport b, EnforceBound(""));
    r.images_evicted += b.images_evicted;
    r.bytes_freed += b.bytes_freed;
    r.blobs_removed += b.blobs_removed;
    r.layers_removed += b.layers_removed;
  }
  return r;
}

}  // namespace lsb::image
