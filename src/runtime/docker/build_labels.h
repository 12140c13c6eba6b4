// The labels a built environment's image carries (docker_builder.h kLabelBuild*), read back: for
// `image inspect --docker` and GET /v1/policies. The labels were written from the image's own
// report, so every value is checked for its shape here too: what is not a string or a
// [name, version] pair of strings is left out.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "runtime/build_plan.h"

namespace lsb::docker {

// Label `key` of an image inspect's Config (or of an object with "Labels"); "" when absent.
std::string ImageLabel(const nlohmann::json& labelled, const char* key);

// A label holding [[name, version], ...] as pairs; malformed entries (or a malformed list) skipped.
NameVersions LabelPairs(const std::string& text);

}  // namespace lsb::docker
