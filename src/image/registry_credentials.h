// Registry credentials from Docker's client config, the file `docker login` writes:
// $DOCKER_CONFIG/config.json, else ~/.docker/config.json, `auths.<registry>.auth` = base64(user:pass).
// Credential helpers (credsStore, credHelpers) are not run: they are programs, and a pull must not
// execute whatever a config names; such a config is reported in the 401 message instead.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace lsb::image::registry {

struct Credentials {
  std::string username;
  std::string password;
  std::string source;  // "/root/.docker/config.json auths.\"127.0.0.1:5000\"" (for messages)
};

struct CredentialLookup {
  std::optional<Credentials> credentials;
  std::string config_path;  // the file read ("" when none exists)
  std::string note;         // why a config entry was not usable, for the 401 message
};

// The config file Docker would read: $DOCKER_CONFIG/config.json, else $HOME/.docker/config.json.
std::string DockerConfigPath();

// Credentials for `registry` ("docker.io", "127.0.0.1:5000", "ghcr.io") in the config text, which
// came from `path`. Docker Hub's entry is "https://index.docker.io/v1/"; other keys match with or
// without an http(s):// prefix and a trailing path. A malformed file or entry is an error naming it.
Result<CredentialLookup> FindCredentials(std::string_view config_text, const std::string& path,
                                         const std::string& registry);
// Reads DockerConfigPath() (a missing file is no credentials, not an error).
Result<CredentialLookup> LoadCredentials(const std::string& registry);

// RFC 4648 base64 (padding optional); nullopt on a character outside the alphabet.
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace lsb::image::registry
