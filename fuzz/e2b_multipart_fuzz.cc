// libFuzzer target: a file upload to the E2B front door (POST /files, multipart/form-data). The
// input's first line is the Content-Type header (it carries the boundary), the rest the body.
// Accepted parts stay within the documented bounds.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/e2b/multipart.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nl = in.find('\n');
  if (nl == std::string_view::npos) return 0;
  const std::string content_type(in.substr(0, nl));
  const std::string_view body = in.substr(nl + 1);
  auto parts = lsb::server::e2b::ParseMultipart(content_type, body);
  if (!parts.ok()) return 0;
  if (parts->size() > lsb::server::e2b::kMaxUploadParts) __builtin_trap();
  size_t bytes = 0;
  for (const auto& p : *parts) bytes += p.data.size() + p.filename.size();
  if (bytes > body.size()) __builtin_trap();  // nothing invented
  return 0;
}
