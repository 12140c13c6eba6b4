// llm-sandbox image pull: an image from a registry into the image store (docs/images.md), or with
// --layout into an OCI image layout directory (docs/image-pull.md). Into the store: PullIntoStore
// (image/store_pull.h: resumable, one download of an image at a time, blobs the store has reused).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "image/reference.h"
#include "image/registry_client.h"
#include "image/store.h"
#include "image/store_pull.h"

namespace lsb::cli {
namespace {

constexpr const char* kImagePullUsage =
    "usage: llm-sandbox image pull REF [--store DIR | --layout DIR] [options]\n"
    "\n"
    "  REF                      python:3.12-slim, ghcr.io/org/app:1, 127.0.0.1:5000/x@sha256:...\n"
    "  --store DIR              the image store (default $LLM_SANDBOX_IMAGE_STORE, else\n"
    "                           <state dir>/images; docs/images.md)\n"
    "  --layout DIR             instead of the store: write an OCI image layout into DIR (created; a\n"
    "                           killed pull into the same DIR resumes)\n"
    "  --max-store-bytes SIZE   the store's size bound (default $LLM_SANDBOX_IMAGE_STORE_MAX, else\n"
    "                           20G; 0: none); least recently used images no box uses are evicted\n"
    "  --quiet                  no progress display\n"
    "  --insecure-registry HOST allow plain HTTP to HOST[:PORT] (loopback registries always may)\n"
    "  --ca-file FILE           trust this CA bundle for the registry (also read:\n"
    "                           /etc/docker/certs.d/HOST:PORT/*.crt, and the system's CAs)\n"
    "  --certs-dir DIR          instead of /etc/docker/certs.d\n"
    "  --registry-mirror URL    try this Docker Hub mirror first (repeatable)\n"
    "  --jobs N                 concurrent blob downloads (default 3, at most 16)\n"
    "\n"
    "credentials: $DOCKER_CONFIG/config.json or ~/.docker/config.json (`docker login` writes it)\n";

int Usage(const char* msg) {
  if (msg != nullptr) std::fprintf(stderr, "llm-sandbox image pull: %s\n\n", msg);
  std::fputs(kImagePullUsage, msg != nullptr ? stderr : stdout);
  return 2;
}

}  // namespace

int ImagePullCommand(const Args& args) {
  std::string ref_text, layout, store_dir, max_store_bytes;
  bool quiet = false;
  image::PullOptions opts;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const char* name) -> const std::string* {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "llm-sandbox image pull: %s needs a value\n", name);
        return nullptr;
      }
      return &args[++i];
    };
    const std::string* v = nullptr;
    if (a == "--help" || a == "-h") {
      std::fputs(kImagePullUsage, stdout);
      return 0;
    } else if (a == "--quiet" || a == "-q") {
      quiet = true;
    } else if (a == "--layout") {
      if (!(v = value("--layout"))) return 2;
      layout = *v;
    } else if (a == "--store") {
      if (!(v = value("--store"))) return 2;
      store_dir = *v;
    } else if (a == "--max-store-bytes") {
      if (!(v = value("--max-store-bytes"))) return 2;
      max_store_bytes = *v;
    } else if (a == "--insecure-registry") {
      if (!(v = value("--insecure-registry"))) return 2;
      opts.insecure_registries.push_back(*v);
    } else if (a == "--ca-file") {
      if (!(v = value("--ca-file"))) return 2;
      opts.ca_file = *v;
    } else if (a == "--certs-dir") {
      if (!(v = value("--certs-dir"))) return 2;
      opts.certs_dir = *v;
    } else if (a == "--registry-mirror") {
      if (!(v = value("--registry-mirror"))) return 2;
      opts.docker_hub_mirrors.push_back(*v);
    } else if (a == "--jobs") {
      if (!(v = value("--jobs"))) return 2;
      char* end = nullptr;
      long n = std::strtol(v->c_str(), &end, 10);
      if (end == v->c_str() || *end != '\0' || n < 1 || n > image::kMaxPullJobs)
        return Usage("--jobs must be a number from 1 to 16");
      opts.jobs = static_cast<int>(n);
    } else if (!a.empty() && a[0] == '-') {
      return Usage(("unknown option " + a).c_str());
    } else if (ref_text.empty()) {
      ref_text = a;
    } else {
      return Usage("one image reference only");
    }
  }
  if (ref_text.empty()) return Usage("no image reference");
  if (!layout.empty() && !store_dir.empty()) return Usage("--store and --layout exclude each other");
  auto ref = image::ParseImageReference(ref_text);
  if (!ref.ok()) {
    std::fprintf(stderr, "llm-sandbox image pull: %s\n", ref.error().message.c_str());
    return 2;
  }
  opts.progress = quiet                 ? image::registry::ProgressMode::kQuiet
                  : isatty(STDERR_FILENO) ? image::registry::ProgressMode::kTerminal
                                          : image::registry::ProgressMode::kPlain;
  std::string into = layout;
  image::PulledImage pulled;
  if (layout.empty()) {
    image::StoreOptions so;
    so.root = store_dir.empty() ? image::DefaultStoreDir() : store_dir;
    auto max = image::StoreMaxBytes(max_store_bytes);
    auto opened = max.ok() ? image::Store::Open([&] { so.max_bytes = *max; return so; }()) : Result<std::unique_ptr<image::Store>>(max.error());
    if (!opened.ok()) {
      std::fprintf(stderr, "llm-sandbox image pull: image store %s: %s\n", so.root.c_str(), opened.error().message.c_str());
      return 1;
    }
    auto stored = image::PullIntoStore(**opened, *ref, opts);
    if (!stored.ok()) {
      std::fprintf(stderr, "llm-sandbox image pull: %s\n", stored.error().message.c_str());
      return 1;
    }
    pulled = std::move(stored->pulled);
    into = "the store " + (*opened)->root();
  } else {
    auto got = image::PullToLayout(*ref, layout, opts);
    if (!got.ok()) {
      std::fprintf(stderr, "llm-sandbox image pull: %s\n", got.error().message.c_str());
      return 1;
    }
    pulled = std::move(got).value();
  }
  if (!quiet) {
    uint64_t total = pulled.config.size;
    for (const auto& l : pulled.layers) total += l.size;
    std::printf("%s: %s (%zu layers, %s, %s downloaded) from %s into %s\n", ref->Familiar().c_str(),
                pulled.manifest_digest.c_str(), pulled.layers.size(), image::registry::HumanBytes(total).c_str(),
                image::registry::HumanBytes(pulled.bytes_downloaded).c_str(), pulled.registry_used.c_str(),
                into.c_str());
  }
  return 0;
}

}  // namespace lsb::cli
