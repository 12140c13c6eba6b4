// UTF-8 checks for program output, which is bytes: JSON carries text, so output that is not valid
// UTF-8 also goes out as base64 (docs/api.md "Binary output"), and chunks are cut between
// characters, not inside one.
#pragma once

#include <cstddef>
#include <string_view>

namespace lsb {

// Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF. The same
// rule the JSON encoder applies, so "valid" here means the text field is lossless.
bool IsValidUtf8(std::string_view s);

// Where to cut s at most `limit` bytes in: min(limit, size) moved back before a multi-byte
// sequence that would be cut short there; unchanged when the bytes there are no UTF-8 at all.
size_t Utf8CutAt(std::string_view s, size_t limit);

}  // namespace lsb
