// The seccomp programs of the default configurations, compiled at build time by
// lsb-seccomp-prebuild (src/init/prebuild/) with the same CompileSeccompPrograms a box would run:
// libseccomp's output for a fixed configuration never changes, so no box pays for compiling it.
// The generated table is build/generated/seccomp_prebuilt.cc; a unit test compares each entry
// with a fresh compile.
#pragma once

#include <linux/filter.h>

#include <cstddef>

namespace lsb::init {

struct PrebuiltSeccomp {
  int handoff_fd;
  bool trace_opens;
  bool watched;
  const sock_filter* escape;
  size_t escape_len;
  const sock_filter* watch;  // null with watch_len 0 when !watched
  size_t watch_len;
};

extern const PrebuiltSeccomp kPrebuiltSeccomp[];
extern const size_t kPrebuiltSeccompCount;

// The handoff descriptor of the policies' default resources.open_files (256): the one the table
// is built for.
inline constexpr int kPrebuiltHandoffFd = 256;

}  // namespace lsb::init
