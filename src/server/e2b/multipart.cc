#include "server/e2b/multipart.h"

#include <algorithm>
#include <cctype>

namespace lsb::server::e2b {
namespace {

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The value of `param` in a header like `form-data; name="file"; filename="a b"` (quoted or not).
std::string Param(const std::string& header, const std::string& param) {
  std::string lower = Lower(header);
  size_t at = 0;
  for (;;) {
    at = lower.find(param + "=", at);
    if (at == std::string::npos) return "";
    bool boundary_ok = at == 0 || lower[at - 1] == ';' || lower[at - 1] == ' ' || lower[at - 1] == '\t';
    if (boundary_ok) break;
    at += param.size();
  }
  size_t v = at + param.size() + 1;
  if (v < header.size() && header[v] == '"') {
    std::string out;
    for (size_t i = v + 1; i < header.size(); ++i) {
      if (header[i] == '\\' && i + 1 < header.size()) {
        out += header[++i];
      } else if (header[i] == '"') {
        return out;
      } else {
        out += header[i];
      }
    }
    return "";  // unterminated: no value
  }
  size_t end = header.find(';', v);
  std::string out = header.substr(v, end == std::string::npos ? std::string::npos : end - v);
  while (!out.empty() && (out.back() == ' ' || out.back() == '\t')) out.pop_back();
  return out;
}

}  // namespace

Result<std::vector<UploadPart>> ParseMultipart(const std::string& content_type, std::string_view body) {
  if (Lower(content_type).rfind("multipart/form-data", 0) != 0)
    return Error{"the upload is not multipart/form-data (Content-Type '" + content_type + "')"};
  std::string boundary = Param(content_type, "boundary");
  if (boundary.empty() || boundary.size() > 70)
    return Error{"the multipart Content-Type has no boundary of 1 to 70 characters"};
  const std::string delim = "--" + boundary;
  std::vector<UploadPart> parts;
  size_t pos = body.find(delim);
  if (pos == std::string_view::npos) return Error{"the multipart body has no boundary line"};
  pos += delim.size();
  for (;;) {
    if (body.substr(pos, 2) == "--") return parts;  // the closing delimiter
    if (body.substr(pos, 2) != "\r\n") return Error{"the multipart boundary line is not followed by CRLF"};
    pos += 2;
    if (parts.size() == kMaxUploadParts)
      return Error{"the upload has more than " + std::to_string(kMaxUploadParts) + " parts"};
    size_t head_end = body.find("\r\n\r\n", pos);
    if (head_end == std::string_view::npos || head_end - pos > kMaxPartHeaderBytes)
      return Error{"a multipart part's headers are missing their end or longer than " +
                   std::to_string(kMaxPartHeaderBytes) + " bytes"};
    std::string_view head = body.substr(pos, head_end - pos);
    UploadPart part;
    bool disposition = false;
    size_t line_start = 0;
    while (line_start <= head.size()) {
      size_t nl = head.find("\r\n", line_start);
      std::string line(head.substr(line_start, nl == std::string_view::npos ? std::string_view::npos : nl - line_start));
      size_t colon = line.find(':');
      if (colon != std::string::npos && Lower(line.substr(0, colon)) == "content-disposition") {
        std::string value = line.substr(colon + 1);
        if (Lower(value).find("form-data") == std::string::npos)
          return Error{"a multipart part's Content-Disposition is not form-data"};
        part.filename = Param(value, "filename");
        disposition = true;
      }
      if (nl == std::string_view::npos) break;
      line_start = nl + 2;
    }
    if (!disposition) return Error{"a multipart part has no Content-Disposition header"};
    size_t data_start = head_end + 4;
    size_t next = body.find("\r\n" + delim, data_start);
    if (next == std::string_view::npos) return Error{"the multipart body ends inside a part (no closing boundary)"};
    part.data = std::string(body.substr(data_start, next - data_start));
    parts.push_back(std::move(part));
    pos = next + 2 + delim.size();
  }
}

}  // namespace lsb::server::e2b
