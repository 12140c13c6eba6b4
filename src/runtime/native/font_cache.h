// matplotlib's font list for host-rooted boxes (issue 37). matplotlib builds fontlist-v*.json on
// its first import, executing fc-list to find the system's fonts; in a box fc-list is refused by
// the commands allowlist (two denied_exec alerts per box) and the build costs 1.7 s at 0.5 CPU.
// The daemon builds the list once, from the host's own python3 and fonts (the software every
// host-rooted box runs, not a request's code), and each box gets a copy by value in its setup
// (init/font_cache.h): no box can change the list another box reads.
#pragma once

#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "base/result.h"

namespace lsb::native {

struct FontCache {
  std::string name;  // fontlist-v<N>.json, as matplotlib names it
  std::string json;  // its content; both empty when the host has no matplotlib
};

// Builds the list with `python` (-I, an empty environment, as nobody when root, in a fresh temp
// dir as MPLCONFIGDIR, killed after `timeout_s`). A host without matplotlib gives an empty cache,
// not an error; an error is a build that ran and failed (the daemon logs it, boxes go without).
Result<FontCache> BuildFontCache(const std::string& python, int timeout_s = 60);

// The host's list, built once in the background from /usr/bin/python3 when first asked for by
// Start (the daemon at start), and waited for by Get (each host-rooted python box's setup).
class HostFontCache {
 public:
  void Start();
  const FontCache& Get();

 private:
  std::once_flag started_;
  std::shared_future<FontCache> built_;
};

// Whether a box's allowlist names a python interpreter (only then is the list worth its bytes).
bool AllowsPython(const std::vector<std::string>& allow);

}  // namespace lsb::native
