// The bounds an image import enforces (docs/images.md "Bounds"). Every archive and every JSON
// document comes from outside (a registry, a `docker save` file someone handed over): each count
// and byte is capped before it is trusted. Tests lower them to prove each one is enforced.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lsb::image {

struct UnpackLimits {
  uint64_t max_entries = 1'000'000;             // tar entries in one layer
  uint64_t max_layer_bytes = 16ull << 30;       // file content one layer may write (16 GiB)
  // Uncompressed bytes per compressed byte, checked once `ratio_grace_bytes` have been produced:
  // real layers stay well below 20:1; a gzip bomb of zeros reaches 1000:1.
  uint64_t max_expansion_ratio = 200;
  uint64_t ratio_grace_bytes = 64ull << 20;
  size_t max_path_bytes = 4096;                 // an entry's name (or link target), as PATH_MAX
  size_t max_path_depth = 256;                  // directory levels of one entry
  size_t max_header_bytes = 1u << 20;           // one pax header or GNU long name/link
};

struct ImageLimits {
  UnpackLimits unpack;
  size_t max_layers = 128;                      // layers of one image (overlayfs stacks ~500 at most)
  size_t max_index_depth = 4;                   // index -> index -> ... -> manifest
  size_t max_json_bytes = 4u << 20;             // a manifest, index or config (4 MiB)
  size_t max_archive_images = 64;               // images in one `docker save` archive
};

}  // namespace lsb::image
