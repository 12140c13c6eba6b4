// matplotlib's font list in the box (BoxSetup.font_cache, issue 37): without it every
// `import matplotlib.pyplot` rebuilds the list (1.7 s at 0.5 CPU) and executes fc-list, which the
// commands allowlist refuses with two denied_exec alerts. The daemon builds it once from the host's
// fonts; init writes it into a directory of the job dir's tmpfs that passes matplotlib's
// writability test (it refuses a read-only MPLCONFIGDIR and falls back to rebuilding in a temp
// dir) while the list itself stays read-only and the box's own: no box can change another's.
#pragma once

#include <map>
#include <string>

#include "base/result.h"
#include "protocol/messages.h"

namespace lsb::init {

// The directory under the job dir: a dot name no program file takes (Supervisor refuses it).
inline constexpr const char* kFontCacheDirName = ".matplotlib";

// Writes setup.font_cache as `job_dir_path`/.matplotlib/NAME (file 0444, dir 1777, both init's);
// nothing when the setup has none. `job_dir_path` is where the job dir is mounted now (before
// pivot_root, under the new root). A name other than fontlist-v<digits>.json or a list over
// 4 MiB is refused: the setup comes from the daemon, but init checks what it writes.
Status PlaceFontCache(const protocol::BoxSetup& setup, const std::string& job_dir_path);

// Points MPLCONFIGDIR at the list when the setup has one and the run does not set it itself.
void AddFontCacheEnv(std::map<std::string, std::string>& env, const protocol::BoxSetup& setup);

}  // namespace lsb::init
