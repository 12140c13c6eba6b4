// The OCI image-spec documents the store reads (and Docker's v2 equivalents): descriptors,
// manifests, indexes / manifest lists, image configs. Parsed with the bounded JSON parser; every
// digest must be sha256, every media type one this store knows, or the document is refused.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "image/image_root.h"

namespace lsb::image {

inline constexpr const char* kOciManifest = "application/vnd.oci.image.manifest.v1+json";
inline constexpr const char* kOciIndex = "application/vnd.oci.image.index.v1+json";
inline constexpr const char* kOciConfig = "application/vnd.oci.image.config.v1+json";
inline constexpr const char* kOciLayerTar = "application/vnd.oci.image.layer.v1.tar";
inline constexpr const char* kOciLayerGzip = "application/vnd.oci.image.layer.v1.tar+gzip";
inline constexpr const char* kOciLayerZstd = "application/vnd.oci.image.layer.v1.tar+zstd";
inline constexpr const char* kDockerManifest = "application/vnd.docker.distribution.manifest.v2+json";
inline constexpr const char* kDockerManifestList = "application/vnd.docker.distribution.manifest.list.v2+json";
inline constexpr const char* kRefNameAnnotation = "org.opencontainers.image.ref.name";

struct Descriptor {
  std::string media_type;
  std::string digest;  // "sha256:<hex>"
  uint64_t size = 0;
  std::string os, architecture, variant;  // index entries only
  std::string ref_name;                   // annotations[org.opencontainers.image.ref.name]
};

struct Manifest {
  std::string media_type;
  Descriptor config;
  std::vector<Descriptor> layers;
};

struct Index {
  std::vector<Descriptor> manifests;
};

struct Config {
  ImageConfig image;                 // env, workdir, entrypoint, cmd, user, os, architecture
  std::vector<std::string> diff_ids; // rootfs.diff_ids, lowest layer first
  std::string created;               // RFC 3339, as the builder wrote it
};

bool IsIndexMediaType(const std::string& t);
bool IsManifestMediaType(const std::string& t);
bool IsLayerMediaType(const std::string& t);

// What a document is when its media type is not given by a descriptor: its own "mediaType", else
// an index when it has "manifests", a manifest when it has "layers".
Result<std::string> SniffMediaType(const std::string& json, size_t max_bytes);
Result<Manifest> ParseManifest(const std::string& json, size_t max_bytes);
Result<Index> ParseIndex(const std::string& json, size_t max_bytes);
Result<Config> ParseConfig(const std::string& json, size_t max_bytes);

// The host's platform in OCI terms ("amd64", "arm64", ...).
std::string HostArchitecture();
// The manifest of `index` for linux/HostArchitecture(); kNotFound listing the platforms present.
Result<Descriptor> PickPlatform(const Index& index);

}  // namespace lsb::image
