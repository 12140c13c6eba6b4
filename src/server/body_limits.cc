#include "server/body_limits.h"

#include <algorithm>

namespace lsb::server {

uint64_t BodyBytesForFile(uint64_t max_file) { return (max_file + 2) / 3 * 4 + kBodyEnvelopeBytes; }

Result<BodyLimits> ReconcileBodyLimits(std::optional<uint64_t> max_body, std::optional<uint64_t> max_file,
                                       uint64_t default_file) {
  BodyLimits out;
  if (!max_body) {
    out.max_file = max_file.value_or(default_file);
    out.max_body = std::max(kMinDefaultBodyBytes, BodyBytesForFile(out.max_file));
    return out;
  }
  out.max_body = *max_body;
  if (max_file) {
    out.max_file = *max_file;
    if (BodyBytesForFile(*max_file) > *max_body)
      return Error{"--max-body " + std::to_string(*max_body) + " is too small for --max-file " +
                   std::to_string(*max_file) + ": an execute body carries a file as base64 (4 bytes per 3) plus " +
                   std::to_string(kBodyEnvelopeBytes) + " bytes for the rest, so it needs at least " +
                   std::to_string(BodyBytesForFile(*max_file)) + "; raise --max-body, lower --max-file, or leave "
                   "--max-body out (it is then derived from --max-file)"};
    return out;
  }
  // Only the body is bounded: the file limit becomes the largest file such a body can carry.
  uint64_t room = *max_body > kBodyEnvelopeBytes ? *max_body - kBodyEnvelopeBytes : *max_body / 2;
  out.max_file = std::min(default_file, std::max<uint64_t>(1, room / 4 * 3));
  if (out.max_file < default_file)
    out.note = "--max-file follows --max-body " + std::to_string(*max_body) + ": " + std::to_string(out.max_file) +
               " bytes, the largest file such a body carries as base64";
  return out;
}

}  // namespace lsb::server
