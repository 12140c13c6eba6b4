// multipart/form-data (RFC 7578) as the E2B SDK uploads files: parts named "file" whose filename
// is the target path. Parsed from a body already bounded by the daemon's --max-body; the parts,
// each part's header bytes and the boundary are bounded here, and anything malformed (no closing
// boundary, a part without a filename, a header line past the bound) is an error, never a guess.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace lsb::server::e2b {

inline constexpr size_t kMaxUploadParts = 64;
inline constexpr size_t kMaxPartHeaderBytes = 8192;

struct UploadPart {
  std::string filename;  // as sent ("" when the part had none)
  std::string data;
};

// `content_type` is the request's header (it carries the boundary).
Result<std::vector<UploadPart>> ParseMultipart(const std::string& content_type, std::string_view body);

}  // namespace lsb::server::e2b
