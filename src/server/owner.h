// Ownership (DESIGN §11, docs/security.md "Ownership"): tokens are identities. Every object a
// request creates (a session, an execution's live and recent views, its live events, an MCP
// session) records the owner of the request, and only a request of the same owner sees it: any
// other gets 404 (or, for lists and event streams, does not see it), never the object. Without
// tokens the daemon has one user (owner ""), who sees everything; there is no admin token.
#pragma once

#include <string>

namespace lsb::server {

// The owner id of a bearer token: "tok-" + the first 16 hex digits of its SHA-256 (stable across
// restarts, safe to log: it names the token without revealing it).
std::string OwnerOfToken(const std::string& token);

}  // namespace lsb::server
