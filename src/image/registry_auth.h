// Authentication to a registry as the distribution spec and Docker Hub do it: a request answered
// 401 carries `WWW-Authenticate: Bearer realm=...,service=...,scope=...` (get a token from the
// realm, anonymously or with basic credentials, then send `Authorization: Bearer <token>`) or
// `Basic realm=...` (send the credentials on every request). Docker Hub asks for a token even for
// public images. A token or header, once had, is reused by every download of the pull.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "image/registry_credentials.h"
#include "image/registry_http.h"

namespace lsb::image::registry {

struct Challenge {
  std::string scheme;                         // lower-cased: "bearer", "basic"
  std::map<std::string, std::string> params;  // lower-cased names: realm, service, scope, error
  std::string Param(const std::string& name) const;
};

// Every challenge in the WWW-Authenticate values (RFC 7235: several per header, comma separated;
// quoted strings with \-escapes). Unparseable parts end the parse; what came before is kept.
std::vector<Challenge> ParseChallenges(const std::vector<std::string>& headers);

// The realm URL with service and scope query parameters, as Docker asks for a pull token.
std::string TokenRequestTarget(const Url& realm, const std::string& service, const std::string& scope);

// The token in a token service's JSON answer ("token", else "access_token").
Result<std::string> ParseTokenResponse(std::string_view body);

// Whether plain HTTP may be used for a host (loopback, or named insecure by the user).
using PlainHttpAllowed = std::function<bool(const std::string& host)>;

class Authorizer {
 public:
  Authorizer(std::string registry, std::string repository, CredentialLookup creds, PlainHttpAllowed plain_ok)
      : registry_(std::move(registry)), repository_(std::move(repository)), creds_(std::move(creds)),
        plain_ok_(std::move(plain_ok)) {}

  // The Authorization header value for requests to the registry ("" when none is known yet).
  std::string Header() const;
  // Answers a 401: gets a token or takes the basic credentials, so the request can be sent
  // again (the caller bounds how often). `rejected_header` is the header the refused request carried: when another thread has
  // replaced it since, that one is used. An error (kPermissionDenied) says what was tried and how
  // to give credentials.
  Status OnUnauthorized(HttpClient& http, const Response& resp, const std::string& rejected_header);
  // "anonymous" / "basic auth as USER from FILE ..." for messages.
  std::string Tried() const;
  // How a user gives credentials for this registry (the end of a 401 message).
  std::string HowToGiveCredentials() const;

 private:
  Status FetchToken(HttpClient& http, const Challenge& c);
  std::string registry_;
  std::string repository_;
  CredentialLookup creds_;
  PlainHttpAllowed plain_ok_;
  mutable std::mutex mu_;
  std::string header_;
  std::string tried_;
};

}  // namespace lsb::image::registry
