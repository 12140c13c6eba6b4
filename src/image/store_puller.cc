#include "image/store_puller.h"

#include "base/time_format.h"
#include "image/registry_digest.h"
#include "image/store_lock.h"

namespace lsb::image {
namespace {

using Clock = std::chrono::steady_clock;

// One pull's events: the blobs' progress gathered from the download threads, passed on at most
// once per interval (a pull of any size costs its listener a bounded number of events per second).
class PullReporter {
 public:
  PullReporter(std::string reference, std::shared_ptr<const PullListener> listener, std::chrono::milliseconds interval)
      : listener_(std::move(listener)), interval_(interval), start_(Clock::now()) {
    event_.reference = std::move(reference);
  }

  void Started() {
    std::lock_guard<std::mutex> lock(mu_);
    Emit("started");
  }

  void OnBlob(const registry::BlobProgress& b) {
    std::lock_guard<std::mutex> lock(mu_);
    registry::BlobProgress* slot = nullptr;
    for (auto& have : event_.blobs)
      if (have.digest == b.digest) slot = &have;
    if (!slot) slot = &event_.blobs.emplace_back();
    *slot = b;
    if (Clock::now() - last_ >= interval_) Emit("progress");
  }

  void Finished(const Result<StorePull>& r) {
    std::lock_guard<std::mutex> lock(mu_);
    if (r.ok()) {
      event_.manifest_digest = r->root.manifest_digest;
      event_.bytes_downloaded = r->pulled.bytes_downloaded;
      Emit("done");
    } else {
      event_.error = r.error().message;
      Emit("failed");
    }
  }

 private:
  void Emit(const char* state) {  // with mu_ held
    last_ = Clock::now();
    if (!listener_ || !*listener_) return;
    event_.state = state;
    event_.bytes_done = event_.bytes_total = 0;
    for (const auto& b : event_.blobs) {
      event_.bytes_done += b.done;
      event_.bytes_total += b.total;
    }
    event_.elapsed_ms = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(last_ - start_).count());
    (*listener_)(event_);
  }

  const std::shared_ptr<const PullListener> listener_;
  const std::chrono::milliseconds interval_;
  const Clock::time_point start_;
  std::mutex mu_;
  Clock::time_point last_{};
  PullEvent event_;
};

// True when the store holds `ref` as imported at or after `since` (RFC 3339, millisecond, UTC:
// such strings order as their times): another process pulled it while this one waited.
bool ImportedSince(const Store& store, const ImageReference& ref, const std::string& since) {
  auto entries = store.List();
  if (!entries.ok()) return false;
  for (const auto& e : *entries)
    if (e.reference == ref.Canonical()) return e.imported >= since;
  return false;
}

}  // namespace

Result<StorePull> PullIntoStore(Store& store, const ImageReference& ref, const PullOptions& opts) {
  // The image's resumable pull dir, on the store's file system (the import moves the blobs instead
  // of copying them); held locked, so another process pulling this image into this store waits.
  LSB_ASSIGN_OR_RETURN(TempDir dir, store.PullDirFor(ref));
  PullOptions with_reuse = opts;
  // Blobs the store has are hard-linked in, verified, and not downloaded again (a re-pull under
  // container.pull: always costs the manifest; a pull killed in its import resumes from them).
  if (with_reuse.reuse_blobs_dir.empty()) with_reuse.reuse_blobs_dir = store.root() + "/blobs/sha256";
  auto pulled = PullToLayout(ref, dir.path(), with_reuse);
  if (!pulled.ok()) {
    dir.Keep();  // what was verified, and the partial blobs, for the next pull to resume
    return pulled.error();
  }
  auto root = store.ImportOciLayout(dir.path(), ref);
  if (!root.ok()) return root.error().Wrap("into the store " + store.root());
  // Success: `dir` is removed as it goes out of scope; its blobs now live in the store.
  return StorePull{std::move(pulled).value(), std::move(root).value()};
}

Result<StoreOptions> StoreOptionsFor(const std::string& dir, const std::string& max_bytes_flag) {
  StoreOptions so;
  so.root = dir.empty() ? DefaultStoreDir() : dir;
  LSB_ASSIGN_OR_RETURN(so.max_bytes, StoreMaxBytes(max_bytes_flag));
  return so;
}

Result<StoreAndPuller> MakeStoreAndPuller(const std::string& dir, PullOptions opts) {
  LSB_ASSIGN_OR_RETURN(StoreOptions so, StoreOptionsFor(dir));
  if (so.root.empty())
    return Error::InvalidArgument("store", "no image store directory (no HOME for its default place): pass --store DIR "
                                           "or set LLM_SANDBOX_IMAGE_STORE");
  StoreAndPuller out;
  out.store = std::make_shared<SharedStore>(std::move(so));
  out.puller = std::make_shared<StorePuller>(out.store, std::move(opts));
  return out;
}

Result<Store*> SharedStore::Get() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!store_) {
    auto opened = Store::Open(opts_);
    if (!opened.ok()) return opened.error().Wrap("image store " + opts_.root);
    store_ = std::move(opened).value();
  }
  return store_.get();
}

Result<ImageRoot> SharedStore::Resolve(const ImageReference& ref) const {
  LSB_ASSIGN_OR_RETURN(Store * store, Get());
  return store->Resolve(ref);
}

StorePuller::StorePuller(std::shared_ptr<SharedStore> store, PullOptions opts)
    : store_(std::move(store)), opts_([&] {
        opts.progress = registry::ProgressMode::kQuiet;
        opts.on_blob = nullptr;
        return std::move(opts);
      }()) {}

void StorePuller::SetListener(PullListener listener, std::chrono::milliseconds interval) {
  std::lock_guard<std::mutex> lock(mu_);
  listener_ = std::make_shared<const PullListener>(std::move(listener));
  interval_ = interval;
}

uint64_t StorePuller::registry_pulls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return registry_pulls_;
}

Status StorePuller::Pull(const ImageReference& ref) {
  const std::string key = ref.Canonical();
  std::shared_ptr<Flight> flight;
  {
    std::unique_lock<std::mutex> lock(mu_);
    auto it = in_flight_.find(key);
    if (it != in_flight_.end()) {  // the same image is being pulled: its result is ours
      flight = it->second;
      cv_.wait(lock, [&] { return flight->done; });
      return flight->status;
    }
    flight = std::make_shared<Flight>();
    in_flight_[key] = flight;
  }
  Status st = PullOnce(ref);
  {
    std::lock_guard<std::mutex> lock(mu_);
    flight->status = st;
    flight->done = true;
    in_flight_.erase(key);
  }
  cv_.notify_all();
  return st;
}

Status StorePuller::PullOnce(const ImageReference& ref) {
  LSB_ASSIGN_OR_RETURN(Store * store, store_->Get());
  // Another process pulling the same image holds this lock; when it is ours, what that process
  // imported meanwhile is the image we wanted (for `always` too: it is as new as ours would be).
  const std::string since = Rfc3339(std::chrono::system_clock::now());
  std::string lock_path = store->root() + "/tmp/pulling-" + registry::Sha256Digest(ref.Canonical()).substr(7, 16) + ".lock";
  LSB_ASSIGN_OR_RETURN(FileLock image_lock, FileLock::Exclusive(lock_path));
  if (ImportedSince(*store, ref, since)) return OkStatus();

  std::shared_ptr<const PullListener> listener;
  std::chrono::milliseconds interval;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++registry_pulls_;
    listener = listener_;
    interval = interval_;
  }
  PullReporter reporter(ref.Canonical(), listener, interval);
  PullOptions opts = opts_;
  opts.on_blob = [&reporter](const registry::BlobProgress& b) { reporter.OnBlob(b); };
  reporter.Started();
  auto pulled = PullIntoStore(*store, ref, opts);
  reporter.Finished(pulled);
  if (!pulled.ok()) return pulled.error();
  return OkStatus();
}

}  // namespace lsb::image
