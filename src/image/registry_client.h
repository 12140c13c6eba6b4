// Pulling an image from any registry that speaks the OCI distribution API into a standard OCI
// image layout directory (oci-layout, index.json, blobs/sha256/<hex>), which the image store then
// imports (Store::ImportOciLayout). Docker's conventions hold where a user meets them: Docker Hub
// names and its anonymous token, ~/.docker/config.json credentials, /etc/docker/certs.d CAs,
// plain HTTP only for loopback or registries named insecure, a mirror for docker.io.
// Every blob is verified against its digest while it streams; index.json is written last, so a
// layout without one is an unfinished pull (a killed pull resumes from its `.partial` files).
// docs/image-pull.md has the user-facing description and the bounds.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "base/result.h"
#include "image/reference.h"
#include "image/registry_manifest.h"
#include "image/registry_progress.h"

namespace lsb::image {

inline constexpr int kDefaultPullJobs = 3;
inline constexpr int kMaxPullJobs = 16;

struct PullOptions {
  // Registries ("host:port" or "host") where plain HTTP is allowed besides loopback ones.
  std::vector<std::string> insecure_registries;
  std::string ca_file;                            // an extra CA bundle trusted for the registry
  std::string certs_dir = "/etc/docker/certs.d";  // <dir>/<host:port>/*.crt, Docker's layout
  // Mirrors of Docker Hub ("https://mirror.example", "http://127.0.0.1:5001"), tried in order
  // before registry-1.docker.io; other registries are not mirrored (as Docker).
  std::vector<std::string> docker_hub_mirrors;
  int jobs = kDefaultPullJobs;  // concurrent blob downloads, 1..kMaxPullJobs
  int attempts = 5;             // tries per request before the pull fails (transport errors, 5xx, 429)
  std::chrono::milliseconds backoff{250};          // first retry delay, doubled each time (max 4 s)
  std::chrono::milliseconds io_timeout{30000};     // a silent connection for this long is broken
  registry::ProgressMode progress = registry::ProgressMode::kQuiet;
  FILE* progress_out = stderr;
  // A directory of blobs by hex digest on the layout's file system (the image store's
  // blobs/sha256): a blob found there is hard-linked into the layout, verified again, and not
  // downloaded. "" = none.
  std::string reuse_blobs_dir;
  // Called from the download threads as each blob's bytes arrive (often: keep it cheap and
  // thread-safe); empty = nobody listens.
  std::function<void(const registry::BlobProgress&)> on_blob;
};

struct PulledImage {
  std::string reference;        // canonical reference pulled
  std::string manifest_digest;  // the image manifest written to the layout
  std::string manifest_media_type;
  std::string index_digest;     // the index/list the reference named, when it named one
  registry::Platform platform;  // the index entry chosen (empty when there was no index)
  registry::Descriptor config;
  std::vector<registry::Descriptor> layers;
  uint64_t bytes_downloaded = 0;  // over the network in this run (resumed parts excluded)
  uint64_t bytes_reused = 0;      // blobs or parts already in the layout
  std::string registry_used;      // the endpoint that served the manifest ("https://host:port")
};

Result<PulledImage> PullToLayout(const ImageReference& ref, const std::string& layout_dir, const PullOptions& opts);

}  // namespace lsb::image
