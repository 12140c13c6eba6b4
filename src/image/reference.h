// An image reference as Docker reads it: [registry/]repository[:tag][@digest]. Familiar names are
// normalised the way `docker pull` does: no registry means Docker Hub ("docker.io"), a one-part
// repository there is an official image ("library/python"), no tag and no digest means "latest".
// The first part is a registry only if it has a '.' or a ':' or is "localhost" (so "127.0.0.1:5000/x"
// and "ghcr.io/x" name registries, "myuser/x" is a Docker Hub repository).
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace lsb::image {

struct ImageReference {
  std::string registry;    // "docker.io", "ghcr.io", "127.0.0.1:5000"
  std::string repository;  // "library/python", "org/app"
  std::string tag;         // "3.12-slim"; empty only when a digest is given without a tag
  std::string digest;      // "sha256:<64 hex>" or empty

  // registry/repository[:tag][@digest]: the store's key and what messages print.
  std::string Canonical() const;
  // The short form Docker prints: "python:3.12-slim", "org/app:1", "127.0.0.1:5000/x:y".
  std::string Familiar() const;
  // Where the distribution API lives: "registry-1.docker.io" for Docker Hub, else `registry`.
  std::string ApiHost() const;
  // What to ask the registry for: the digest when there is one, else the tag.
  const std::string& ManifestReference() const { return digest.empty() ? tag : digest; }
};

inline constexpr std::string_view kDockerHub = "docker.io";

// Parses and normalises `text`; an error (kInvalidArgument, field "image") says which part is
// malformed and what the rule is.
Result<ImageReference> ParseImageReference(std::string_view text);

// "sha256:<64 lowercase hex>" (the only digest algorithm accepted; sha512 is refused, not skipped).
bool IsSha256Digest(std::string_view digest);

}  // namespace lsb::image
