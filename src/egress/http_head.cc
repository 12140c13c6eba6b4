#include "egress/http_head.h"

#include <algorithm>
#include <cctype>

#include "policy/network_rules.h"

namespace lsb::egress {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool IsToken(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
  });
}

Result<ProxyTarget> HostPort(std::string_view authority, uint16_t default_port, bool need_port) {
  ProxyTarget t;
  std::string_view host = authority, port;
  if (!authority.empty() && authority[0] == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return Error::InvalidArgument("target", "unclosed '[' in '" + std::string(authority) + "'");
    host = authority.substr(1, close - 1);
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty() && (rest[0] != ':' || rest.size() == 1))
      return Error::InvalidArgument("target", "junk after ']' in '" + std::string(authority) + "'");
    if (!rest.empty()) port = rest.substr(1);
    if (!ParseIpLiteral(host)) return Error::InvalidArgument("target", "'" + std::string(host) + "' is not an IPv6 address");
  } else if (size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (port.empty()) {
    if (need_port) return Error::InvalidArgument("target", "'" + std::string(authority) + "' names no port");
    t.port = default_port;
  } else {
    if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos)
      return Error::InvalidArgument("target", "bad port in '" + std::string(authority) + "'");
    unsigned long v = std::stoul(std::string(port));
    if (v == 0 || v > 65535) return Error::InvalidArgument("target", "bad port in '" + std::string(authority) + "'");
    t.port = static_cast<uint16_t>(v);
  }
  if (auto literal = ParseIpLiteral(host)) {
    t.host = literal->ToString();
    return t;
  }
  auto name = NormalizeHostName(host);
  if (!name.ok()) return Error::InvalidArgument("target", name.error().message);
  t.host = *name;
  return t;
}

}  // namespace

Result<RequestHead> ParseRequestHead(std::string_view head) {
  RequestHead h;
  size_t eol = head.find("\r\n");
  if (eol == std::string_view::npos) return Error::InvalidArgument("request", "no request line");
  std::string_view line = head.substr(0, eol);
  size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp2 == sp1) return Error::InvalidArgument("request", "malformed request line");
  h.method = std::string(line.substr(0, sp1));
  h.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
  h.version = std::string(line.substr(sp2 + 1));
  if (!IsToken(h.method)) return Error::InvalidArgument("request", "malformed method");
  if (h.version != "HTTP/1.1" && h.version != "HTTP/1.0") return Error::InvalidArgument("request", "not HTTP/1.x");
  if (h.target.empty() || h.target.find_first_of(" \t") != std::string::npos)
    return Error::InvalidArgument("request", "malformed target");
  size_t pos = eol + 2;
  bool content_length = false, chunked = false;
  while (pos < head.size()) {
    size_t end = head.find("\r\n", pos);
    if (end == std::string_view::npos) return Error::InvalidArgument("request", "unterminated header");
    if (end == pos) break;  // the blank line
    std::string_view field = head.substr(pos, end - pos);
    pos = end + 2;
    size_t colon = field.find(':');
    if (colon == std::string_view::npos || !IsToken(field.substr(0, colon)))
      return Error::InvalidArgument("request", "malformed header line");  // also refuses obs-fold
    std::string_view value = field.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    if (value.find_first_of("\r\n") != std::string_view::npos || value.find('\0') != std::string_view::npos)
      return Error::InvalidArgument("request", "control character in a header");
    std::string name = Lower(field.substr(0, colon));
    content_length |= name == "content-length";
    chunked |= name == "transfer-encoding";
    h.headers.emplace_back(std::string(field.substr(0, colon)), std::string(value));
  }
  // Both framings at once is how requests are smuggled past a proxy: refuse.
  if (content_length && chunked) return Error::InvalidArgument("request", "both Content-Length and Transfer-Encoding");
  return h;
}

Result<ProxyTarget> ParseAbsoluteTarget(std::string_view target) {
  const std::string lower = Lower(target.substr(0, 8));
  if (lower.rfind("https://", 0) == 0)
    return Error::InvalidArgument("target", "an https:// URL goes through CONNECT (the client speaks TLS itself)");
  if (lower.rfind("http://", 0) != 0)
    return Error::InvalidArgument("target", "not an absolute http:// URL (a forward proxy needs one)");
  std::string_view rest = target.substr(7);
  size_t slash = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, slash);
  if (authority.find('@') != std::string_view::npos) return Error::InvalidArgument("target", "userinfo in the URL");
  LSB_ASSIGN_OR_RETURN(ProxyTarget t, HostPort(authority, 80, false));
  std::string path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (path[0] != '/') path = "/" + path;
  if (size_t hash = path.find('#'); hash != std::string::npos) path.resize(hash);
  t.path = path;
  return t;
}

Result<ProxyTarget> ParseConnectTarget(std::string_view target) { return HostPort(target, 0, true); }

std::string UpstreamHead(const RequestHead& head, const ProxyTarget& target,
                         const std::vector<std::pair<std::string, std::string>>& injected, uint16_t default_port) {
  static const char* kDropped[] = {"host", "connection", "proxy-connection", "keep-alive", "proxy-authorization",
                                   "proxy-authenticate", "te", "trailer", "upgrade"};
  std::string host = target.host.find(':') != std::string::npos ? "[" + target.host + "]" : target.host;
  if (target.port != default_port) host += ":" + std::to_string(target.port);
  std::string out = head.method + " " + target.path + " " + head.version + "\r\nHost: " + host + "\r\n";
  for (const auto& [name, value] : head.headers) {
    std::string lower = Lower(name);
    if (std::any_of(std::begin(kDropped), std::end(kDropped), [&](const char* d) { return lower == d; })) continue;
    if (std::any_of(injected.begin(), injected.end(), [&](const auto& h) { return Lower(h.first) == lower; })) continue;
    out += name + ": " + value + "\r\n";
  }
  for (const auto& [name, value] : injected) out += name + ": " + value + "\r\n";
  out += "Connection: close\r\n\r\n";
  return out;
}

std::string PathForEvents(const std::string& path) {
  std::string p = path.substr(0, path.find('?'));
  if (p.size() > 256) p = p.substr(0, 256) + "...";
  return p;
}

}  // namespace lsb::egress
