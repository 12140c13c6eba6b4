#include "image/registry_auth.h"

#include <cctype>

#include "base/base64.h"
#include "base/bounded_json.h"

namespace lsb::image::registry {
namespace {

constexpr uint64_t kMaxTokenResponseBytes = 1 << 20;

bool IsTokenChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("!#$%&'*+-.^_`|~/").find(c) != std::string_view::npos;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Parses one header's challenges into `out`.
void ParseOne(std::string_view s, std::vector<Challenge>& out) {
  size_t i = 0;
  auto skip_ws = [&] {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == ',')) ++i;
  };
  auto token = [&] {
    size_t start = i;
    while (i < s.size() && IsTokenChar(s[i])) ++i;
    return std::string(s.substr(start, i - start));
  };
  while (true) {
    skip_ws();
    if (i >= s.size()) return;
    std::string scheme = token();
    if (scheme.empty()) return;
    Challenge c;
    c.scheme = Lower(scheme);
    // auth-params: name=value pairs until the next bare token (a new scheme).
    while (true) {
      skip_ws();
      size_t save = i;
      std::string name = token();
      while (i < s.size() && s[i] == ' ') ++i;
      if (name.empty() || i >= s.size() || s[i] != '=') {
        i = save;
        break;
      }
      ++i;
      while (i < s.size() && s[i] == ' ') ++i;
      std::string value;
      if (i < s.size() && s[i] == '"') {
        ++i;
        while (i < s.size() && s[i] != '"') {
          if (s[i] == '\\' && i + 1 < s.size()) ++i;
          value.push_back(s[i++]);
        }
        if (i >= s.size()) {  // unterminated quote: keep what was parsed before it
          out.push_back(std::move(c));
          return;
        }
        ++i;
      } else {  // a token by RFC 7235; servers also send bare URLs, so up to ',' or a space
        size_t start = i;
        while (i < s.size() && s[i] != ',' && s[i] != ' ' && s[i] != '\t') ++i;
        value = std::string(s.substr(start, i - start));
      }
      c.params[Lower(name)] = value;
    }
    out.push_back(std::move(c));
  }
}

std::string QueryEscape(std::string_view s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

}  // namespace

std::string Challenge::Param(const std::string& name) const {
  auto it = params.find(name);
  return it == params.end() ? std::string() : it->second;
}

std::vector<Challenge> ParseChallenges(const std::vector<std::string>& headers) {
  std::vector<Challenge> out;
  for (const auto& h : headers) ParseOne(h, out);
  return out;
}

std::string TokenRequestTarget(const Url& realm, const std::string& service, const std::string& scope) {
  std::string t = realm.target;
  char sep = t.find('?') == std::string::npos ? '?' : '&';
  if (!service.empty()) {
    t += sep + std::string("service=") + QueryEscape(service);
    sep = '&';
  }
  if (!scope.empty()) t += sep + std::string("scope=") + QueryEscape(scope);
  return t;
}

Result<std::string> ParseTokenResponse(std::string_view body) {
  JsonLimits limits;
  limits.max_bytes = kMaxTokenResponseBytes;
  auto parsed = ParseBoundedJson(body, limits);
  if (!parsed.ok() || !parsed->is_object()) return Error{"the token service's answer is not a JSON object"};
  std::string token = JsonStringOr(*parsed, "token", "");
  if (token.empty()) token = JsonStringOr(*parsed, "access_token", "");
  if (token.empty()) return Error{"the token service's answer has no \"token\""};
  for (char c : token)
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return Error{"the token service's token has control characters"};
  return token;
}

std::string Authorizer::Header() const {
  std::lock_guard<std::mutex> lock(mu_);
  return header_;
}

std::string Authorizer::Tried() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tried_.empty() ? "no credentials" : tried_;
}

std::string Authorizer::HowToGiveCredentials() const {
  std::string key = registry_ == "docker.io" ? "https://index.docker.io/v1/" : registry_;
  std::string msg = "give credentials with `docker login " + registry_ + "` or put auths.\"" + key +
                    "\".auth (base64 of user:password) in " +
                    (creds_.config_path.empty() ? DockerConfigPath() : creds_.config_path) +
                    " (the directory is $DOCKER_CONFIG when set)";
  if (!creds_.note.empty()) msg += "; note: " + creds_.note;
  return msg;
}

Status Authorizer::FetchToken(HttpClient& http, const Challenge& c) {
  std::string realm_text = c.Param("realm");
  auto realm = ParseUrl(realm_text);
  if (!realm.ok()) return Error{ErrorCode::kPermissionDenied, "registry " + registry_ + " names a bad token realm: " + realm.error().message};
  if (realm->scheme == "http" && !plain_ok_(realm->host))
    return Error{ErrorCode::kPermissionDenied, "registry " + registry_ + " names a plain-HTTP token realm " + realm_text +
                                                   "; refused (credentials and tokens go over HTTPS only, except to "
                                                   "loopback or --insecure-registry hosts)"};
  std::string scope = c.Param("scope");
  if (scope.empty()) scope = "repository:" + repository_ + ":pull";
  Request req;
  req.url = *realm;
  req.url.target = TokenRequestTarget(*realm, c.Param("service"), scope);
  std::string how = "an anonymous token from " + realm_text;
  if (creds_.credentials) {
    req.headers.emplace_back("Authorization", "Basic " + Base64Encode(creds_.credentials->username + ":" +
                                                                      creds_.credentials->password));
    how = "a token from " + realm_text + " as \"" + creds_.credentials->username + "\" (" + creds_.credentials->source + ")";
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    tried_ = how;
  }
  LSB_ASSIGN_OR_RETURN(Response resp, http.Send(req));
  if (resp.status != 200) {
    http.DiscardBody();
    return Error{ErrorCode::kPermissionDenied, "the token service " + realm_text + " refused " + how + " (HTTP " +
                                                   std::to_string(resp.status) + "); " + HowToGiveCredentials()};
  }
  LSB_ASSIGN_OR_RETURN(std::string body, http.ReadBodyString(kMaxTokenResponseBytes));
  auto token = ParseTokenResponse(body);
  if (!token.ok()) return Error{ErrorCode::kPermissionDenied, "token service " + realm_text + ": " + token.error().message};
  std::lock_guard<std::mutex> lock(mu_);
  header_ = "Bearer " + *token;
  return OkStatus();
}

Status Authorizer::OnUnauthorized(HttpClient& http, const Response& resp, const std::string& rejected_header) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (header_ != rejected_header && !header_.empty()) return OkStatus();  // another download renewed it
  }
  auto challenges = ParseChallenges(resp.www_authenticate);
  for (const auto& c : challenges)
    if (c.scheme == "bearer" && !c.Param("realm").empty()) {
      // A token we got was refused for this scope: asking again gives the same token.
      if (!rejected_header.empty() && rejected_header.rfind("Bearer ", 0) == 0 && c.Param("error") == "insufficient_scope")
        break;
      return FetchToken(http, c);
    }
  for (const auto& c : challenges)
    if (c.scheme == "basic") {
      std::lock_guard<std::mutex> lock(mu_);
      if (!creds_.credentials || !rejected_header.empty()) break;
      tried_ = "basic auth as \"" + creds_.credentials->username + "\" (" + creds_.credentials->source + ")";
      header_ = "Basic " + Base64Encode(creds_.credentials->username + ":" + creds_.credentials->password);
      return OkStatus();
    }
  std::string what = rejected_header.empty() ? (creds_.credentials ? std::string("no usable challenge") : std::string("anonymous access"))
                                             : Tried();
  return Error{ErrorCode::kPermissionDenied, "registry " + registry_ + " answered 401 Unauthorized to the pull of " +
                                                 repository_ + " (tried " + what + "); " + HowToGiveCredentials()};
}

}  // namespace lsb::image::registry
