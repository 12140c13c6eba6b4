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

Status CheckAptPackage(std::string_view entry) {
  const std::string quoted = "'" + std::string(entry.substr(0, 200)) + "'";
  if (entry.empty() || entry.size() > 256) return Error{"a package of 1 to 256 bytes is expected"};
  std::string_view name = entry, arch, version;
  if (size_t eq = name.find('='); eq != std::string_view::npos) {
    version = name.substr(eq + 1);
    name = name.substr(0, eq);
    if (version.empty()) return Error{quoted + " has an empty version after '='"};
  }
  if (size_t colon = name.find(':'); colon != std::string_view::npos) {
    arch = name.substr(colon + 1);
    name = name.substr(0, colon);
    if (arch.empty()) return Error{quoted + " has an empty architecture after ':'"};
  }
  auto lower_digit = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  const std::string not_a_name =
      quoted + " is not a Debian package name (two or more of a-z 0-9 + . -, starting with a letter or digit)";
  if (name.size() < 2 || !lower_digit(name[0])) return Error{not_a_name};
  for (char c : name)
    if (!lower_digit(c) && c != '+' && c != '.' && c != '-') return Error{not_a_name};
  for (char c : arch)
    if (!lower_digit(c) && c != '-') return Error{quoted + " has a bad architecture (a-z 0-9 -)"};
  if (!version.empty() && !std::isdigit(static_cast<unsigned char>(version[0])))
    return Error{quoted + " has a version that does not start with a digit"};
  for (char c : version)
    if (!std::isalnum(static_cast<unsigned char>(c)) && std::string_view(".+~:-").find(c) == std::string_view::npos)
      return Error{quoted + " has a bad version (A-Z a-z 0-9 . + ~ : -)"};
  return OkStatus();
}

Result<AptSource> ParseAptSource(std::string_view line) {
  const std::string quoted = "'" + std::string(line.substr(0, 200)) + "'";
  if (line.size() > kMaxAptSourceBytes) return Error{"a line over 1024 bytes"};
  if (HasControl(line)) return Error{"a control character (a newline?) in " + quoted};
  if (line.rfind("deb ", 0) != 0) return Error{quoted + " does not start with 'deb ' (one-line sources.list format)"};
  std::vector<std::string_view> words;
  std::string_view rest = line.substr(4);
  std::string_view options;
  size_t start = rest.find_first_not_of(' ');
  if (start != std::string_view::npos && rest[start] == '[') {
    size_t close = rest.find(']', start);
    if (close == std::string_view::npos) return Error{quoted + " has an unclosed '[' of options"};
    options = rest.substr(start + 1, close - start - 1);
    rest = rest.substr(close + 1);
  }
  auto safe = [](std::string_view w, std::string_view extra) {
    for (char c : w)
      if (!std::isalnum(static_cast<unsigned char>(c)) &&
          std::string_view("._/=,+~-").find(c) == std::string_view::npos && extra.find(c) == std::string_view::npos)
        return false;
    return true;
  };
  if (!safe(options, " ")) return Error{quoted + ": its options may hold only A-Z a-z 0-9 . _ / = , + ~ - and spaces"};
  for (size_t p = 0; p < rest.size();) {
    size_t b = rest.find_first_not_of(' ', p);
    if (b == std::string_view::npos) break;
    size_t e = rest.find(' ', b);
    if (e == std::string_view::npos) e = rest.size();
    words.push_back(rest.substr(b, e - b));
    p = e;
  }
  if (words.size() < 2)
    return Error{quoted + " needs a URI and a suite (e.g. deb http://deb.debian.org/debian bookworm main)"};
  auto url = ParseIndexUrl(words[0]);
  if (!url.ok()) return Error{quoted + ": " + url.error().message};
  for (size_t i = 1; i < words.size(); ++i)
    if (!safe(words[i], ""))
      return Error{quoted + ": the suite and components may hold only A-Z a-z 0-9 . _ / = , + ~ -"};
  return AptSource{std::move(url).value(), std::string(words[0])};
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
