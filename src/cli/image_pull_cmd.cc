// llm-sandbox image pull: an image from a registry into the image store (docs/images.md), or with
// --layout into an OCI image layout directory (docs/image-pull.md). Into the store, the pull
// writes a layout in the store's own tmp/ and the store imports it (blobs are moved, not copied).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/registry_flags.h"
#include "image/reference.h"
#include "image/registry_client.h"
#include "image/store.h"
#include "image/store_puller.h"

namespace lsb::cli {
namespace {

constexpr const char* kImagePullHead =
    "usage: llm-sandbox image pull REF [--store DIR | --layout DIR] [options]\n"
    "\n"
    "  REF                      python:3.12-slim, ghcr.io/org/app:1, 127.0.0.1:5000/x@sha256:...\n"
    "  --layout DIR             instead of the store: write an OCI image layout into DIR (created; a\n"
    "                           killed pull into the same DIR resumes)\n"
    "  --max-store-bytes SIZE   the store's size bound (default $LLM_SANDBOX_IMAGE_STORE_MAX, else\n"
    "                           20G; 0: none); least recently used images no box uses are evicted\n"
    "  --quiet                  no progress display\n"
    "  --jobs N                 concurrent blob downloads (default 3, at most 16)\n";

void PrintUsage(FILE* out) {
  std::fputs(kImagePullHead, out);
  std::fputs(kRegistryFlagsUsage, out);
}

bool IsRegistryFlag(const std::string& a) {
  for (const auto& n : RegistryFlagNames())
    if (a == n) return true;
  return false;
}

int Usage(const char* msg) {
  if (msg != nullptr) std::fprintf(stderr, "llm-sandbox image pull: %s\n\n", msg);
  PrintUsage(msg != nullptr ? stderr : stdout);
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
      PrintUsage(stdout);
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
    } else if (IsRegistryFlag(a)) {
      if (!(v = value(a.c_str()))) return 2;
      ApplyRegistryFlag(a, *v, opts);
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
  image::PulledImage pulled;
  std::string into = layout;
  if (layout.empty()) {  // into the store (store_puller.h: the one pull-and-import)
    auto so = image::StoreOptionsFor(store_dir, max_store_bytes);
    auto store = so.ok() ? image::Store::Open(*so) : Result<std::unique_ptr<image::Store>>(so.error());
    if (!store.ok()) {
      std::fprintf(stderr, "llm-sandbox image pull: image store %s: %s\n",
                   so.ok() ? so->root.c_str() : image::DefaultStoreDir().c_str(), store.error().message.c_str());
      return 1;
    }
    auto r = image::PullIntoStore(**store, *ref, opts);
    if (!r.ok()) {
      std::fprintf(stderr, "llm-sandbox image pull: %s\n", r.error().message.c_str());
      return 1;
    }
    pulled = std::move(r->pulled);
    into = "the store " + (*store)->root();
  } else {
    auto r = image::PullToLayout(*ref, layout, opts);
    if (!r.ok()) {
      std::fprintf(stderr, "llm-sandbox image pull: %s\n", r.error().message.c_str());
      return 1;
    }
    pulled = std::move(r).value();
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
