// Where and how a pull talks to a registry: the endpoints (Docker Hub's mirrors first, then the
// registry), the scheme of each (HTTPS; plain HTTP only for loopback or --insecure-registry hosts,
// after the registry shows it does not speak TLS), authorization per endpoint, and a GET that
// answers 401s and follows blob-storage redirects (without the Authorization header once the host
// changes). Retrying is the caller's: it knows what may be resumed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "image/reference.h"
#include "image/registry_auth.h"
#include "image/registry_client.h"
#include "image/registry_http.h"

namespace lsb::image::registry {

struct Endpoint {
  Url base;  // scheme, host, port ("/" target)
  bool mirror = false;
  std::shared_ptr<Authorizer> auth;
};

class RegistrySession {
 public:
  static Result<std::unique_ptr<RegistrySession>> Open(const ImageReference& ref, const PullOptions& opts);

  const std::vector<Endpoint>& endpoints() const { return endpoints_; }
  const ImageReference& ref() const { return ref_; }
  std::unique_ptr<HttpClient> NewClient() const;
  bool PlainHttpAllowed(const std::string& host_port, const std::string& host) const;

  // GET <endpoint>/v2/<repository>/<path> with auth; redirects followed when `follow_redirects`.
  // The response's body is left unread on `http`.
  Result<Response> Get(HttpClient& http, const Endpoint& ep, const std::string& path,
                       const std::vector<std::pair<std::string, std::string>>& headers, bool follow_redirects);

 private:
  // https, or http when allowed and the registry answered a TLS hello with something else.
  Status ResolveScheme(Endpoint& ep);
  ImageReference ref_;
  PullOptions opts_;
  std::vector<Endpoint> endpoints_;
};

// "MANIFEST_UNKNOWN: manifest unknown" from a registry's JSON error body ("" if it has none).
std::string RegistryErrorText(std::string_view body);

}  // namespace lsb::image::registry
