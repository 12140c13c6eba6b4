// What the kernel needs besides an executable itself to run it: the ELF program interpreter
// (PT_INTERP, e.g. /lib64/ld-linux-x86-64.so.2) or the "#!" interpreter of a script. Landlock must
// grant EXECUTE on those too, or an allowed command cannot start.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace lsb::init {

// Reads up to `len` bytes at `offset` (fewer at end of file).
using ReadAtFn = std::function<Result<std::string>(uint64_t offset, size_t len)>;

struct ElfInfo {
  bool is_elf = false;
  std::string interp;  // empty for a static executable (or not an ELF file)
};

// Parses the ELF header and program headers (ELF32/ELF64, little-endian) through `read`.
// A file that is not ELF is not an error: is_elf = false. A truncated or inconsistent ELF is.
Result<ElfInfo> ParseElf(const ReadAtFn& read);
Result<ElfInfo> ReadElfInfo(const std::string& path);

// "#!/usr/bin/env python3 -u\n..." -> "/usr/bin/env". std::nullopt when `head` is not a script.
std::optional<std::string> ParseShebang(std::string_view head);

}  // namespace lsb::init
