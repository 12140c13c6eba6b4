// Choosing a backend by name: the one place that knows which backends exist. "auto" picks the
// best one available (native for now; the Docker backend registers here when it lands).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "runtime/backend.h"

namespace lsb {

// Options any backend may use; each takes what it needs.
struct BackendOptions {
  std::string images_file;  // native: the image map (--images)
  std::string init_path;    // native: llm-sandbox-init ("" = search)
};

// Names accepted by MakeBackend, "auto" first.
std::vector<std::string> BackendNames();

// `name`: "auto" | "native" | ... An unknown name is an error listing the known ones.
Result<std::unique_ptr<Backend>> MakeBackend(const std::string& name, const BackendOptions& opts = {});

}  // namespace lsb
