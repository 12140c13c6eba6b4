// The pieces of a git patch for a binary file (change_set.h): the blob id `git apply` checks the
// preimage against (SHA-1 of "blob <size>\0" + bytes), and a "GIT binary patch" literal hunk
// (the bytes deflated with zlib, in git's base85, 52 bytes a line).
#pragma once

#include <string>
#include <string_view>

namespace lsb::sched {

// 40 hex digits.
std::string GitBlobId(std::string_view bytes);
// "literal <size>\n" and its lines, then the blank line that ends the hunk.
std::string GitBinaryLiteral(std::string_view bytes);

}  // namespace lsb::sched
