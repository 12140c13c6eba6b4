// The box's /etc on an image root (rootfs "image"): the image's own, read-only, as Docker gives a
// container, with the files the runtime owns laid over it as Docker does: hostname, hosts and
// resolv.conf made here (the box's hostname, localhost; no resolver: the box has no network),
// passwd and group the image's own plus the box's user and group when the image has no entry for
// their ids (so getpwuid(getuid()) works, as on the host root's synthetic /etc). Each is bound
// over the image's file, read-only, only where the image has it as a regular file: the image's
// /etc is read-only, nothing is created in it, and a symlink there is never followed (it would
// resolve against the host before pivot_root).
#pragma once

#include <string>

#include "base/result.h"
#include "protocol/messages.h"

namespace lsb::init {

// The image's passwd (or group) text with a line for `id` appended when no line has that id in
// its third field; `line` is the entry to append. Pure, for the unit test.
std::string WithEntryFor(const std::string& text, unsigned id, const std::string& line);

// With `new_root` assembled but not yet pivoted into (its top is init's writable tmpfs).
Status OverlayImageEtc(const std::string& new_root, const protocol::BoxSetup& setup);

}  // namespace lsb::init
