// The in-box half of change sets (change_set.h), src/inbox/manifest.py: op "M" of the driver
// walks the given roots (no link followed) and sends one record per entry: kind d (directory), f
// (regular file), l (symbolic link), o (anything else); data "<mode octal> <size> <sha256 hex>\n"
// then the file's bytes (or the link's target) when the file is within the per-file and total
// budgets, nothing otherwise. Past max_entries it stops with status 3.
#include "scheduler/changes/change_set.h"

#include "inbox/inbox_sources.h"

namespace lsb::sched {

const std::string& ManifestSource() {
  static const std::string s(inbox::ManifestSource());
  return s;
}

}  // namespace lsb::sched
