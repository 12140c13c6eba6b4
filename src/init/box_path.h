// Paths of the box, opened the way the file worker (file_worker.h) must: absolute and normalized,
// one component at a time from the root with O_NOFOLLOW, so no symbolic link is ever followed,
// not even one swapped in between two steps (each step is relative to the fd of the last). A link
// anywhere in a path is an error (ELOOP), as it was for the Python helper this replaces.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"

namespace lsb::init {

// Whether `path` is absolute and normalized: no empty, "." or ".." component, no NUL, at most
// PATH_MAX bytes. "/" itself passes. The error names the path and what is wrong with it.
Status CheckBoxPath(std::string_view path);

// The directory at `path` (O_PATH), no link followed; with `create`, missing directories are made
// (mode 0755 under the umask). errno-carrying errors: ENOENT, ENOTDIR, ELOOP (a link).
Result<UniqueFd> OpenBoxDir(std::string_view path, bool create);

// `path` split into its parent directory (opened as OpenBoxDir does) and its last component.
// kInvalid-style error (EINVAL) for "/": it has no parent.
struct ParentAndName {
  UniqueFd dir;
  std::string name;
};
Result<ParentAndName> OpenBoxParent(std::string_view path, bool create_parents);

// An error carrying `err` whose message is "<path>: <what errno says>" (ELOOP: "a symbolic link
// in the path (links are not followed)").
Error PathError(std::string_view path, int err);

}  // namespace lsb::init
