// What a built environment holds (container.build), as the backend that built it recorded it:
// the native image store's <store>/builds/<key>.json (written by runtime/native/env_builder.cc),
// or the Docker image's labels (docker/build_labels.h). `image ls`/`inspect` and GET /v1/policies
// read it; the daemon through Backend::BuildRecordOf, never from a backend's files.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "runtime/build_plan.h"

namespace lsb {

struct BuildRecord {
  std::string reference;  // the derived image
  std::string policy, source_file, base, base_digest, python;
  std::vector<std::string> steps;  // each step's description
  NameVersions packages;           // python's distributions: name, version
  NameVersions apt;                // build.apt's Debian packages: name, version
};

// A record in the store's JSON form; `reference` stands in when the text names none. `origin`
// (a path) names the record in the error when the text is not a JSON object.
Result<BuildRecord> ParseBuildRecord(const std::string& text, const std::string& origin,
                                     const std::string& reference);

}  // namespace lsb
