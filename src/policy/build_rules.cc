#include "policy/build_rules.h"

#include <cctype>
#include <vector>

#include "policy/network_rules.h"

namespace lsb {
namespace {

bool HasControl(std::string_view s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}

// The components of a '/'-separated path; an error for "", "." or "..".
Status CheckComponents(std::string_view path, const char* what) {
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view c = path.substr(start, end - start);
    if (c == "..") return Error{std::string(what) + " has a '..' component, which would leave its directory"};
    if (c == ".") return Error{std::string(what) + " has a '.' component"};
    if (c.empty()) return Error{std::string(what) + " has an empty component ('//')"};
    start = end + 1;
  }
  return OkStatus();
}

}  // namespace

Status CheckPipRequirement(std::string_view req) {
  if (req.empty()) return Error{"an empty requirement"};
  if (req.size() > kMaxBuildEntryBytes) return Error{"a requirement over 4096 bytes"};
  if (HasControl(req)) return Error{"a control character (a newline?) in a requirement"};
  if (req[0] == '-')
    return Error{"'" + std::string(req) + "' is a pip option, not a requirement (options such as -r, -e, "
                 "--index-url are not taken from the list)"};
  if (!std::isalnum(static_cast<unsigned char>(req[0])))
    return Error{"'" + std::string(req) + "' does not start with a project name"};
  return OkStatus();
}

Result<IndexUrl> ParseIndexUrl(std::string_view url) {
  IndexUrl out;
  size_t sep = url.find("://");
  if (sep == std::string_view::npos) return Error{"'" + std::string(url) + "' is not an http:// or https:// URL"};
  out.scheme = std::string(url.substr(0, sep));
  if (out.scheme != "http" && out.scheme != "https")
    return Error{"'" + std::string(url) + "': the scheme must be http or https"};
  if (HasControl(url) || url.find_first_of(" ?#@\\") != std::string_view::npos)
    return Error{"'" + std::string(url) + "': no spaces, user info (@), query (?) or fragment (#)"};
  std::string_view rest = url.substr(sep + 3);
  std::string_view authority = rest.substr(0, rest.find('/'));
  std::string_view host = authority;
  std::string_view port;
  if (!authority.empty() && authority[0] == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return Error{"'" + std::string(url) + "': an unclosed '[' in the host"};
    host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return Error{"'" + std::string(url) + "': junk after the address"};
      port = authority.substr(close + 2);
    }
  } else if (size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) return Error{"'" + std::string(url) + "' names no host"};
  if (!port.empty() || authority.find(':') != std::string_view::npos) {
    if (port.empty() || port.size() > 5) return Error{"'" + std::string(url) + "': a bad port"};
    uint32_t n = 0;
    for (char c : port) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return Error{"'" + std::string(url) + "': a bad port"};
      n = n * 10 + static_cast<uint32_t>(c - '0');
    }
    if (n == 0 || n > 65535) return Error{"'" + std::string(url) + "': the port is out of range"};
    out.port = static_cast<uint16_t>(n);
  }
  if (auto ip = ParseIpLiteral(host)) {
    out.host = ip->ToString();
  } else {
    auto name = NormalizeHostName(host);
    if (!name.ok()) return Error{"'" + std::string(url) + "': " + name.error().message};
    out.host = *name;
  }
  return out;
}

Status CheckBuildSource(std::string_view source) {
  if (source.empty()) return Error{"an empty source"};
  if (source.size() > kMaxBuildEntryBytes || HasControl(source)) return Error{"a source over 4096 bytes or with a control character"};
  if (source[0] == '/') return Error{"'" + std::string(source) + "' is absolute; sources are relative to the policy file's directory"};
  std::string_view s = source;
  if (s.back() == '/') s.remove_suffix(1);
  auto ok = CheckComponents(s, ("'" + std::string(source) + "'").c_str());
  return ok;
}

Status CheckBuildTarget(std::string_view target) {
  if (target.empty() || target[0] != '/') return Error{"'" + std::string(target) + "' is not an absolute path"};
  if (target.size() > kMaxBuildEntryBytes || HasControl(target)) return Error{"a target over 4096 bytes or with a control character"};
  std::string_view s = target.substr(1);
  if (!s.empty() && s.back() == '/') s.remove_suffix(1);
  if (s.empty()) return Error{"'/' itself cannot be a target"};
  return CheckComponents(s, ("'" + std::string(target) + "'").c_str());
}

}  // namespace lsb
