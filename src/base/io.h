// Small, EINTR-safe I/O helpers shared by the host side and llm-sandbox-init.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/result.h"

namespace lsb {

// Writes all of data, retrying on EINTR and short writes.
Status WriteAll(int fd, std::string_view data);
// Reads exactly n bytes. Returns Error::Eof() (IsEof(), sys_errno 0) on a clean EOF at offset 0.
Status ReadExact(int fd, void* buf, size_t n);
// Reads a whole (small) file such as a cgroup or /proc file.
Result<std::string> ReadFile(const std::string& path);
// Writes a whole (small) file, e.g. a cgroup control file or /proc/<pid>/uid_map.
Status WriteFile(const std::string& path, std::string_view data);

}  // namespace lsb
