// Pulling from a registry into the image store (docs/images.md), in one place:
//   PullIntoStore  the registry client writes an OCI layout in the store's own tmp/, the store
//                  imports it (blobs moved, not copied); `llm-sandbox image pull` calls it;
//   SharedStore    a process's image store, opened on first use (a run whose image the map gives
//                  never creates the store), shared by the backend, the puller and GET /v1/images;
//   StorePuller    the ImagePuller the native backend gets (container.pull): thread-safe, one
//                  download per image at a time, in this process (later callers wait for the
//                  first and share its result) and across processes (a lock file per image in the
//                  store's tmp/: who waited on it finds the image the other one just imported),
//                  with throttled progress events for the daemon's event stream.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/result.h"
#include "image/image_puller.h"
#include "image/image_source.h"
#include "image/registry_client.h"
#include "image/store.h"

namespace lsb::image {

struct StorePull {
  PulledImage pulled;  // what came over the network
  ImageRoot root;      // the stored image
};

Result<StorePull> PullIntoStore(Store& store, const ImageReference& ref, const PullOptions& opts);

// The store options a command uses: `dir`, else DefaultStoreDir(); the size bound from
// `max_bytes_flag` (--max-store-bytes) when given, else $LLM_SANDBOX_IMAGE_STORE_MAX (an error
// naming it when malformed).
Result<StoreOptions> StoreOptionsFor(const std::string& dir, const std::string& max_bytes_flag = "");

class SharedStore : public ImageSource {
 public:
  explicit SharedStore(StoreOptions opts) : opts_(std::move(opts)) {}
  // The open store (opened, its directory created, on the first call); a failure is returned and
  // tried again by the next call.
  Result<Store*> Get() const;
  Result<ImageRoot> Resolve(const ImageReference& ref) const override;
  const std::string& root() const { return opts_.root; }

 private:
  const StoreOptions opts_;
  mutable std::mutex mu_;
  mutable std::unique_ptr<Store> store_;
};

// One pull as a listener sees it: "started", "progress" (at most one per interval), then "done"
// or "failed". `blobs` holds the config and every layer seen so far.
struct PullEvent {
  std::string reference;  // canonical
  std::string state;
  std::vector<registry::BlobProgress> blobs;
  uint64_t bytes_done = 0, bytes_total = 0;  // of `blobs`
  uint64_t bytes_downloaded = 0;             // done: over the network (resumed or reused excluded)
  std::string manifest_digest;               // done
  std::string error;                         // failed
  uint64_t elapsed_ms = 0;
};
using PullListener = std::function<void(const PullEvent&)>;

inline constexpr std::chrono::milliseconds kPullEventInterval{500};

class StorePuller : public ImagePuller {
 public:
  // `opts` as `image pull` takes them (registry options); its display settings are ignored: a
  // backend's pull is quiet, reported through the listener.
  StorePuller(std::shared_ptr<SharedStore> store, PullOptions opts);
  Status Pull(const ImageReference& ref) override;
  // Receives every pull's events, called on the pulling thread (keep it short: it holds up the
  // download). Replaces the previous listener; pulls under way keep the one they started with.
  void SetListener(PullListener listener, std::chrono::milliseconds interval = kPullEventInterval);
  // Pulls that went to the registry, since construction (one per image however many waited).
  uint64_t registry_pulls() const;

 private:
  struct Flight {  // one pull under way, shared by those who wait for it
    bool done = false;
    Status status = OkStatus();
  };
  Status PullOnce(const ImageReference& ref);

  std::shared_ptr<SharedStore> store_;
  const PullOptions opts_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::shared_ptr<Flight>> in_flight_;  // by canonical reference
  std::shared_ptr<const PullListener> listener_;
  std::chrono::milliseconds interval_ = kPullEventInterval;
  uint64_t registry_pulls_ = 0;
};

// What a backend gets to find and fetch images (BackendOptions::image_source, image_puller): the
// store at `dir` ("" = DefaultStoreDir(), not opened yet) and a puller into it with `opts`.
struct StoreAndPuller {
  std::shared_ptr<SharedStore> store;
  std::shared_ptr<StorePuller> puller;
};
Result<StoreAndPuller> MakeStoreAndPuller(const std::string& dir, PullOptions opts);

}  // namespace lsb::image
