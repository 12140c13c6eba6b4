#include "image/registry_session.h"

#include <algorithm>

#include "base/bounded_json.h"

namespace lsb::image::registry {
namespace {

// A request answered 401 again after this many fresh tokens or credentials is refused.
constexpr int kMaxAuthRounds = 3;
constexpr int kMaxRedirects = 5;

bool IsRedirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

}  // namespace

std::string RegistryErrorText(std::string_view body) {
  JsonLimits limits;
  limits.max_bytes = 64 * 1024;
  auto parsed = ParseBoundedJson(body, limits);
  if (!parsed.ok() || !parsed->is_object()) return "";
  auto errors = parsed->find("errors");
  if (errors == parsed->end() || !errors->is_array() || errors->empty()) return "";
  const auto& e = (*errors)[0];
  std::string code = JsonStringOr(e, "code", "");
  std::string msg = JsonStringOr(e, "message", "");
  std::string out = code.empty() ? msg : (msg.empty() ? code : code + ": " + msg);
  return out.substr(0, 300);
}

bool RegistrySession::PlainHttpAllowed(const std::string& host_port, const std::string& host) const {
  if (IsLoopbackHost(host)) return true;
  const auto& list = opts_.insecure_registries;
  return std::find(list.begin(), list.end(), host_port) != list.end() ||
         std::find(list.begin(), list.end(), host) != list.end();
}

std::unique_ptr<HttpClient> RegistrySession::NewClient() const {
  return std::make_unique<HttpClient>(TlsOptions{opts_.ca_file, opts_.certs_dir}, opts_.io_timeout);
}

Result<std::unique_ptr<RegistrySession>> RegistrySession::Open(const ImageReference& ref, const PullOptions& opts) {
  auto s = std::make_unique<RegistrySession>();
  s->ref_ = ref;
  s->opts_ = opts;
  auto plain_ok = [self = s.get()](const std::string& host) { return self->PlainHttpAllowed(host, host); };
  auto add = [&](Url base, bool mirror, const std::string& cred_key) -> Status {
    base.target = "/";
    LSB_ASSIGN_OR_RETURN(CredentialLookup creds, LoadCredentials(cred_key));
    Endpoint ep{std::move(base), mirror,
                std::make_shared<Authorizer>(cred_key, ref.repository, std::move(creds), plain_ok)};
    s->endpoints_.push_back(std::move(ep));
    return OkStatus();
  };
  if (ref.registry == kDockerHub) {
    for (const auto& m : opts.docker_hub_mirrors) {
      auto url = ParseUrl(m);
      if (!url.ok()) return Error::InvalidArgument("registry_mirror", "registry mirror \"" + m + "\": " + url.error().message);
      if (url->scheme == "http" && !s->PlainHttpAllowed(url->HostPort(), url->host))
        return Error::InvalidArgument("registry_mirror", "registry mirror " + m +
                                                             " is plain HTTP; use https:// or name it with "
                                                             "--insecure-registry " + url->HostPort());
      LSB_TRY(add(*url, true, url->HostPort()));
    }
  }
  LSB_ASSIGN_OR_RETURN(Url base, ParseUrl("https://" + ref.ApiHost()));
  LSB_TRY(add(base, false, ref.registry));
  LSB_TRY(s->ResolveScheme(s->endpoints_.back()));
  return s;
}

Status RegistrySession::ResolveScheme(Endpoint& ep) {
  if (!PlainHttpAllowed(ep.base.HostPort(), ep.base.host)) return OkStatus();
  auto http = NewClient();
  Request req;
  req.url = ep.base;
  req.url.target = "/v2/";
  auto resp = http->Send(req);
  if (resp.ok()) {
    http->DiscardBody();
    return OkStatus();
  }
  if (resp.error().field != "tls.handshake") return resp.error();
  // The registry does not speak TLS, and Docker would use plain HTTP for it (loopback/insecure).
  bool default_port = ep.base.port == "443";
  ep.base.scheme = "http";
  if (default_port) ep.base.port = "80";
  return OkStatus();
}

Result<Response> RegistrySession::Get(HttpClient& http, const Endpoint& ep, const std::string& path,
                                      const std::vector<std::pair<std::string, std::string>>& headers,
                                      bool follow_redirects) {
  Url url = ep.base;
  url.target = "/v2/" + ref_.repository + "/" + path;
  bool same_origin = true;
  int redirects = 0;
  int auth_rounds = 0;
  for (;;) {
    Request req;
    req.url = url;
    req.headers = headers;
    std::string auth = same_origin ? ep.auth->Header() : std::string();
    if (!auth.empty()) req.headers.emplace_back("Authorization", auth);
    LSB_ASSIGN_OR_RETURN(Response resp, http.Send(req));
    if (resp.status == 401 && same_origin) {
      http.DiscardBody();
      if (++auth_rounds > kMaxAuthRounds)
        return Error{ErrorCode::kPermissionDenied, "registry " + ep.base.HostPort() + " keeps answering 401 to " +
                                                       ep.auth->Tried() + "; " + ep.auth->HowToGiveCredentials()};
      LSB_TRY(ep.auth->OnUnauthorized(http, resp, auth));
      continue;
    }
    if (follow_redirects && IsRedirect(resp.status)) {
      std::string location = resp.Header("location");
      http.DiscardBody();
      if (++redirects > kMaxRedirects)
        return Error{ErrorCode::kUnavailable, "registry " + ep.base.HostPort() + " redirected " + path + " more than " +
                                                  std::to_string(kMaxRedirects) + " times"};
      LSB_ASSIGN_OR_RETURN(Url next, ResolveUrl(url, location));
      if (next.scheme == "http" && url.scheme == "https" && !PlainHttpAllowed(next.HostPort(), next.host))
        return Error{ErrorCode::kPermissionDenied, "registry " + ep.base.HostPort() +
                                                       " redirected a blob from HTTPS to plain HTTP " + next.HostPort() +
                                                       "; refused"};
      // Blob storage (S3, a CDN) gets no registry credentials: they are the registry's only.
      same_origin = same_origin && next.Origin() == ep.base.Origin();
      url = std::move(next);
      continue;
    }
    return resp;
  }
}

}  // namespace lsb::image::registry
