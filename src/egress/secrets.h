// network.secrets made real (docs/network.md "Secrets"): each entry's ${VAR} references filled from
// the operator's secrets file (--secrets-file, NAME=value lines) or, failing that, the environment
// of the daemon or CLI, never the box's. The values live only in the proxy's memory: they are put
// into the request head sent upstream for the one named host, and masked in what that host sends
// back, and nothing else (events, errors, logs) ever holds them.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "policy/policy.h"

namespace lsb::egress {

// One header to add to requests for `host`, its value resolved.
struct HeaderSecret {
  std::string host;    // normalized name
  std::string header;  // as the policy wrote it
  std::string value;   // the secret itself
  // What the proxy masks in the host's answers: the value and each variable's value in it (those
  // of at least kMinMaskedBytes: a shorter one would mask noise).
  std::vector<std::string> masked;
};

inline constexpr size_t kMinMaskedBytes = 4;

inline constexpr size_t kMaxSecretBytes = 8 << 10;      // one resolved value
inline constexpr size_t kMaxSecretsFileBytes = 1 << 20;  // the whole file

// The secrets file: "NAME=value" lines, '#' comments and blank lines skipped, the value taken
// verbatim to the end of the line. Refused when it is readable or writable by group or others
// (chmod 600), a line is malformed, or a name repeats; errors name the line, never a value.
Result<std::map<std::string, std::string>> ReadSecretsFile(const std::string& path);

// Every entry of `secrets` with its value filled: from `file_values` first, then the environment.
// A variable set in neither is an error naming it, the entry, and where it was looked for; a
// value with a CR, LF or NUL (it would split the header) or over kMaxSecretBytes is refused.
Result<std::vector<HeaderSecret>> ResolveSecrets(const std::vector<NetworkSecret>& secrets,
                                                 const std::map<std::string, std::string>& file_values,
                                                 const std::string& file_name);

// The secrets for `host` (exact, normalized name), in the policy's order.
std::vector<const HeaderSecret*> SecretsFor(const std::vector<HeaderSecret>& secrets, std::string_view host);

}  // namespace lsb::egress
