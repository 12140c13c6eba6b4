// The option string of a tmpfs mount ("size=100M,noexec,nosuid"). Writable mounts are always
// noexec, nosuid and nodev: a program that can write a file must never be able to run it, gain
// privilege through it, or open a device through it. So "exec", "suid" and "dev" are refused,
// and noexec/nosuid/nodev apply whether written or not.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "policy/policy.h"

namespace lsb {

inline constexpr uint64_t kDefaultTmpfsSizeBytes = 64ull << 20;

struct TmpfsOptionProblem {
  size_t offset = 0;    // where the offending option starts in the text
  std::string option;   // the option as written
  std::string message;
  std::string hint;
};

// Fills `mount` (size_bytes, mode, flags, options) from `text`; an empty text means defaults.
// Returns every problem found; empty means the text is valid.
std::vector<TmpfsOptionProblem> ParseTmpfsOptions(std::string_view text, TmpfsMount* mount);

// The option string of a mount as Docker's HostConfig.Tmpfs takes it (and `policy explain` shows
// it): "rw,size=67108864,mode=1777,noexec,nosuid,nodev".
std::string FormatTmpfsOptions(uint64_t size_bytes, uint32_t mode, bool noexec, bool nosuid, bool nodev);

// The options the loader understands, for messages: "size=SIZE, mode=OCTAL, noexec, nosuid, nodev".
std::string KnownTmpfsOptions();

}  // namespace lsb
