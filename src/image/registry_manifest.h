// Manifests as a registry serves them: what media types are asked for and accepted, an index
// (OCI image index, Docker manifest list) narrowed to the host's platform, and an image manifest
// checked for what a pull relies on (sha256 digests, sizes, a layer count bound). Docker's schema 1
// is refused: it has no content-addressed config, and registries stopped serving it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace lsb::image::registry {

inline constexpr std::string_view kOciIndex = "application/vnd.oci.image.index.v1+json";
inline constexpr std::string_view kOciManifest = "application/vnd.oci.image.manifest.v1+json";
inline constexpr std::string_view kDockerList = "application/vnd.docker.distribution.manifest.list.v2+json";
inline constexpr std::string_view kDockerManifest = "application/vnd.docker.distribution.manifest.v2+json";

// The Accept header of a manifest request: the four types above.
std::string ManifestAccept();

// Bounds (docs/image-pull.md "Bounds"): a manifest is JSON of at most 4 MiB (containerd's limit),
// an index may point at another index at most this deep, an image has at most this many layers,
// a config is JSON of at most 8 MiB, a blob at most 64 GiB.
inline constexpr uint64_t kMaxManifestBytes = 4u << 20;
inline constexpr int kMaxIndexDepth = 3;
inline constexpr size_t kMaxLayers = 256;
inline constexpr size_t kMaxIndexEntries = 1024;
inline constexpr uint64_t kMaxConfigBytes = 8u << 20;
inline constexpr uint64_t kMaxBlobBytes = 64ull << 30;

struct Platform {
  std::string os;            // "linux"
  std::string architecture;  // GOARCH: "amd64", "arm64", "arm", ...
  std::string variant;       // "v8", "v7", ... or ""
  std::string ToString() const;
};

// The platform this process runs on, in GOARCH terms (uname machine mapped as Docker maps it).
Platform HostPlatform();

struct Descriptor {
  std::string media_type;
  std::string digest;  // "sha256:<64 hex>"
  uint64_t size = 0;
  Platform platform;   // index entries only
};

enum class ManifestKind { kIndex, kImage };

struct Manifest {
  ManifestKind kind = ManifestKind::kImage;
  std::string media_type;
  std::vector<Descriptor> manifests;  // kIndex
  Descriptor config;                  // kImage
  std::vector<Descriptor> layers;     // kImage
};

// Parses `body`, served with Content-Type `content_type` (may be empty: the body's mediaType is
// used). Errors name what is wrong; schema 1 gets its own message.
Result<Manifest> ParseManifest(std::string_view body, std::string_view content_type);

// The entry of an index to pull on `host`: os and architecture equal, then the variant rule
// (arm64: "" or "v8"; arm: the host's variant, else the highest below it; others: any). Attestation
// entries (platform unknown/unknown) never match. The error lists the platforms the index has.
Result<Descriptor> SelectPlatform(const Manifest& index, const Platform& host);

}  // namespace lsb::image::registry
