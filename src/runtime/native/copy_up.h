// Copy-up of named image files into a build step's upper directory (build_box.h). As root, the
// build box's root is a mapped host uid while the image's files belong to the store's owner: a
// step can replace them but not open them for writing. A step that must write some in place (dpkg's
// locks and status: BuildStep.writable) gets them copied into its upper layer first, owned by the
// box's root, exactly as overlayfs would show them.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/result.h"

namespace lsb::native {

// Copies `rel` (relative to /, no '..') as the stack `lowers` (lowest first) shows it into the
// directory `upper`, with the layer's mode (at most 0755) and owner uid:gid. Read from the layers
// with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS): a symlink on the way is never followed (a
// hostile image could point it at the host's files). Nothing is copied when no layer shows a regular
// file there (absent, a whiteout, below an opaque directory, a symlink or another kind) or when
// `upper` lacks its directory or already has it.
Status CopyUpFromLayers(const std::vector<std::string>& lowers, int upper, const std::string& rel, uid_t uid,
                        gid_t gid);

}  // namespace lsb::native
