#include "image/reference.h"

#include <cctype>

namespace lsb::image {
namespace {

Error Bad(std::string_view text, const std::string& why) {
  return Error::InvalidArgument("image", "image reference '" + std::string(text) + "': " + why +
                                             " (form: [registry/]repository[:tag][@sha256:digest], "
                                             "e.g. python:3.12-slim or 127.0.0.1:5000/org/app:1)");
}

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// One path component: lowercase alphanumerics joined by '.', '_', '__' or runs of '-'.
bool ValidComponent(std::string_view c) {
  if (c.empty() || !IsLowerAlnum(c.front()) || !IsLowerAlnum(c.back())) return false;
  for (size_t i = 0; i < c.size(); ++i) {
    char ch = c[i];
    if (IsLowerAlnum(ch)) continue;
    if (ch == '-') continue;
    if (ch == '.' || ch == '_') {
      // '.' and '_' separate; '__' is allowed, '._' or '..' is not.
      char next = c[i + 1];
      if (next == '_' && ch == '_') {
        ++i;
        if (!IsLowerAlnum(c[i + 1])) return false;
        continue;
      }
      if (!IsLowerAlnum(next)) return false;
      continue;
    }
    return false;
  }
  return true;
}

bool ValidTag(std::string_view t) {
  if (t.empty() || t.size() > 128) return false;
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  if (!word(t.front())) return false;
  for (char c : t)
    if (!word(c) && c != '.' && c != '-') return false;
  return true;
}

bool ValidRegistry(std::string_view r) {
  if (r.empty() || r.size() > 255) return false;
  for (char c : r) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' || c == '[' || c == ']';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

bool IsSha256Digest(std::string_view d) {
  constexpr std::string_view kPrefix = "sha256:";
  if (d.size() != kPrefix.size() + 64 || d.substr(0, kPrefix.size()) != kPrefix) return false;
  for (char c : d.substr(kPrefix.size()))
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

Result<ImageReference> ParseImageReference(std::string_view text) {
  if (text.empty()) return Bad(text, "empty");
  if (text.size() > 512) return Bad(text.substr(0, 64), "longer than 512 characters");
  ImageReference ref;
  std::string_view rest = text;
  if (auto at = rest.find('@'); at != std::string_view::npos) {
    ref.digest = std::string(rest.substr(at + 1));
    rest = rest.substr(0, at);
    if (!IsSha256Digest(ref.digest)) return Bad(text, "the digest must be sha256: followed by 64 lowercase hex digits");
  }
  // A registry is the first component when it looks like a host (has '.' or ':', or is localhost).
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    std::string_view first = rest.substr(0, slash);
    if (first.find('.') != std::string_view::npos || first.find(':') != std::string_view::npos || first == "localhost") {
      if (!ValidRegistry(first)) return Bad(text, "registry '" + std::string(first) + "' is not a host[:port]");
      ref.registry = std::string(first);
      rest = rest.substr(slash + 1);
    }
  }
  if (ref.registry.empty() || ref.registry == "index.docker.io" || ref.registry == "registry-1.docker.io")
    ref.registry = std::string(kDockerHub);
  // The tag follows the last ':' after the last '/' (a ':' before it would be a port).
  size_t last_slash = rest.rfind('/');
  size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos && (last_slash == std::string_view::npos || colon > last_slash)) {
    ref.tag = std::string(rest.substr(colon + 1));
    rest = rest.substr(0, colon);
    if (!ValidTag(ref.tag)) return Bad(text, "tag '" + ref.tag + "' must be 1-128 of [A-Za-z0-9_.-], not starting with '.' or '-'");
  }
  if (rest.empty()) return Bad(text, "no repository name");
  size_t start = 0;
  while (start <= rest.size()) {
    size_t end = rest.find('/', start);
    std::string_view comp = rest.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (!ValidComponent(comp))
      return Bad(text, "repository part '" + std::string(comp) +
                           "' must be lowercase letters and digits, joined by '.', '_', '__' or '-'");
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  ref.repository = std::string(rest);
  if (ref.registry == kDockerHub && ref.repository.find('/') == std::string::npos)
    ref.repository = "library/" + ref.repository;
  if (ref.tag.empty() && ref.digest.empty()) ref.tag = "latest";
  return ref;
}

std::string ImageReference::Canonical() const {
  std::string out = registry + "/" + repository;
  if (!tag.empty()) out += ":" + tag;
  if (!digest.empty()) out += "@" + digest;
  return out;
}

std::string ImageReference::Familiar() const {
  std::string out;
  if (registry == kDockerHub) {
    constexpr std::string_view kLibrary = "library/";
    out = repository.rfind(kLibrary, 0) == 0 ? repository.substr(kLibrary.size()) : repository;
  } else {
    out = registry + "/" + repository;
  }
  if (!tag.empty()) out += ":" + tag;
  if (!digest.empty()) out += "@" + digest;
  return out;
}

std::string ImageReference::ApiHost() const {
  return registry == kDockerHub ? std::string("registry-1.docker.io") : registry;
}

}  // namespace lsb::image
