// File system steps that never go through a path string: every open is relative to a directory
// fd, one component at a time with O_NOFOLLOW, so a symlink planted by an archive (or by anyone
// else) is never followed on the way. Used by layer unpacking and by the store's own bookkeeping.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace lsb::image {

// An archive entry's name as components: "./usr//bin/" -> {"usr", "bin"}. Refuses absolute
// names, "..", components over 255 bytes, more than `max_depth` components, names over
// `max_bytes`. Empty for the archive root ("./").
Result<std::vector<std::string>> SplitEntryPath(std::string_view name, size_t max_bytes, size_t max_depth);
std::string JoinPath(const std::vector<std::string>& comps, size_t count);

// Opens the directory `comps[0..count)` below `root` (O_RDONLY | O_DIRECTORY), never following a
// symlink; with `create`, missing directories are made (mode 0755). Refuses (kPermissionDenied)
// when a component is a symlink: an entry below a symlinked directory would be written through it.
Result<UniqueFd> OpenDirBeneath(int root, const std::vector<std::string>& comps, size_t count, bool create);

// Removes `name` in `dir` and, if it is a directory, everything under it, without following
// symlinks. A missing `name` is not an error.
Status RemoveTree(int dir, const std::string& name);

// Replaces `name` in `dir` with `data` atomically: a temp file, fsync, rename, fsync of the dir.
Status WriteFileAtomic(int dir, const std::string& name, std::string_view data, mode_t mode = 0644);

// Reads a whole file `name` in `dir` (no symlink followed), at most `max_bytes`.
Result<std::string> ReadFileAt(int dir, const std::string& name, size_t max_bytes);

// mkdir -p of an absolute or relative host path owned by us (the store root), mode 0755.
Status MakeDirs(const std::string& path);

// Opens a directory path (the store root and its fixed subdirectories).
Result<UniqueFd> OpenDir(const std::string& path);

}  // namespace lsb::image
