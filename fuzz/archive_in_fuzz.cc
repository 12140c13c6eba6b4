// libFuzzer target: an archive a client uploads (PUT /v1/sessions/{id}/archive, inline
// archive_base64): tar, tar.gz, tar.zst or zip, sniffed from the bytes and checked whole on the
// host. Whatever it accepts must keep its promises: every item under the target, no "..", no
// entry or byte count past the limits.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "scheduler/archive/archive_in.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  lsb::sched::ArchiveLimits limits;
  limits.max_entries = 64;
  limits.max_bytes = 1 << 20;
  limits.ratio_grace_bytes = 64 << 10;
  const std::string target = "/tmp/work";
  auto r = lsb::sched::ReadArchive(in, target, limits);
  if (!r.ok()) return 0;
  if (r->items.size() > limits.max_entries || r->bytes > limits.max_bytes) __builtin_trap();
  for (const auto& item : r->items) {
    if (item.path.compare(0, target.size() + 1, target + "/") != 0) __builtin_trap();
    if (item.path.find("/../") != std::string::npos || item.path.size() > limits.max_path_bytes + target.size() + 1)
      __builtin_trap();
  }
  return 0;
}
