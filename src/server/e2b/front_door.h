// The E2B front door (docs/e2b.md): the E2B SDKs' wire protocol as another codec over the same
// sessions, policies, monitoring and audit. Nothing below src/server/ knows it exists.
//  - Control plane (/v2/sandboxes, /sandboxes/{id}...): on the daemon's router, authenticated like
//    every route (the daemon's token, also accepted as X-API-KEY); a sandbox is a session of the
//    token's owner.
//  - Data plane: a request that carries E2b-Sandbox-Id. The SDK sends no API key there, only the
//    sandbox's access token (X-Access-Token, from the create answer): that token, checked in
//    constant time, is what authenticates it, and the request acts as the sandbox's owner on that
//    sandbox alone. @e2b/code-interpreter 2.8 sends X-Access-Token on /execute only; on /contexts
//    it sends E2B-Traffic-Access-Token when the create answer had a trafficAccessToken. So create
//    answers the same per-sandbox secret under both names and either header authenticates (the
//    SDK carries no other secret there; a sandbox id alone is not one). E2b-Sandbox-Port picks the service: 49983 envd (process, filesystem, files),
//    49999 the code interpreter. The data plane has its own routers, so a header cannot turn a
//    v1 route into an unauthenticated one.
#pragma once

#include <optional>
#include <string>

#include "server/e2b/sandbox_table.h"
#include "server/router.h"
#include "server/server_context.h"

namespace lsb::server::e2b {

inline constexpr int kEnvdPort = 49983;
inline constexpr int kInterpreterPort = 49999;
// What the create answer reports as envdVersion: the SDK takes its current (non-legacy) paths
// from 0.5.7 on (octet-stream uploads, no default user).
inline constexpr const char* kEnvdVersion = "0.5.7";

// The per-sandbox secret a data-plane request carries: X-Access-Token, else E2B-Traffic-Access-Token.
std::string AccessToken(const HttpRequest& req);
// The live sandbox a data-plane request names (E2b-Sandbox-Id) with its access token; nullopt
// when either is missing or wrong, or the sandbox is gone.
std::optional<SandboxTable::Found> DataTarget(SandboxTable& table, const HttpRequest& req);

void AddControlRoutes(Router& r, ServerContext& ctx, SandboxTable& table);      // control_resource.cc
void AddEnvdRoutes(Router& r, ServerContext& ctx, SandboxTable& table);         // envd_process.cc, envd_files.cc
void AddEnvdFileRoutes(Router& r, ServerContext& ctx, SandboxTable& table);     // envd_files.cc
void AddInterpreterRoutes(Router& r, ServerContext& ctx, SandboxTable& table);  // interpreter_resource.cc
void AddContextRoutes(Router& r, ServerContext& ctx, SandboxTable& table);      // context_resource.cc

class FrontDoor {
 public:
  explicit FrontDoor(ServerContext& ctx);
  // The control routes, on the daemon's own router.
  void AddControl(Router& main) { AddControlRoutes(main, ctx_, table_); }
  static bool IsDataPlane(const HttpRequest& req) { return req.headers.count("e2b-sandbox-id") != 0; }
  // A data-plane request: the access token, then the port's router (req.owner set to the owner).
  Reply Dispatch(HttpRequest& req, ResponseStream& out) const;
  // The pattern of the data-plane route `req` is for (Router::PatternOf of its port's router); ""
  // for an unserved port or path.
  std::string PatternOf(const HttpRequest& req) const;

 private:
  const Router* PortRouter(const HttpRequest& req) const;
  ServerContext& ctx_;
  mutable SandboxTable table_;
  Router envd_, interpreter_;
};

}  // namespace lsb::server::e2b
