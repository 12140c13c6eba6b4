// The registry and image store options every command that may pull shares (`image pull`, `run`,
// `serve`, `mcp`), parsed in one place so each means the same everywhere (docs/images.md).
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "image/registry_client.h"
#include "runtime/backend_select.h"

namespace lsb::cli {

// --insecure-registry, --ca-file, --certs-dir, --registry-mirror: the options that take a value.
const std::vector<std::string>& RegistryFlagNames();
// Applies `name` (one of RegistryFlagNames()) with `value` to `opts`.
void ApplyRegistryFlag(const std::string& name, const std::string& value, image::PullOptions& opts);

// The usage lines of those options and --store, for the commands' --help.
extern const char* const kRegistryFlagsUsage;

// The image store at `store_dir` ("" = the default) and a puller into it, given to the native
// backend through `bo` (container.pull works). Without a store directory (no --store and no HOME)
// an explicit --store is an error; the default's absence only leaves images to the image map.
Status WireImageStore(const std::string& store_dir, image::PullOptions opts, BackendOptions& bo);

}  // namespace lsb::cli
