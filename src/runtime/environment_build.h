// What Backend::BuildEnvironment answers, the same on every backend (container.build; docs/policy.md):
// the environment's image, how much of it was built now, and where its log is. The CLI's
// `image build` and the daemon's --prebuild print it without knowing which backend built it.
#pragma once

#include <string>

namespace lsb {

struct EnvironmentBuild {
  // The final step's image: build.llm-sandbox.local/env:<key>, in the image store (native) or in
  // the engine (Docker).
  std::string reference;
  std::string digest;  // the stored image's manifest digest; "" when the engine holds the image
  int steps = 0;
  int steps_built = 0;  // 0: every step came from the cache
  // The build log: <store>/builds/<key>.log, written when a step ran (or failed); "" when the
  // backend keeps no log file (Docker: the lines went to the progress callback only).
  std::string log_path;
  // Where the image lives when it is not this process's image store, for messages ("in the
  // Docker engine"); "" for the store.
  std::string held_by;
  bool cached() const { return steps_built == 0; }
};

}  // namespace lsb
