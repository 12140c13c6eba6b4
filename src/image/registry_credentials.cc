#include "image/registry_credentials.h"

#include <sys/stat.h>

#include <cstdlib>

#include "base/bounded_json.h"
#include "base/io.h"

namespace lsb::image::registry {
namespace {

// "https://index.docker.io/v1/" -> "index.docker.io"; "http://h:5000/x" -> "h:5000"; "h" -> "h".
std::string KeyHost(std::string key) {
  if (auto p = key.find("://"); p != std::string::npos) key = key.substr(p + 3);
  if (auto slash = key.find('/'); slash != std::string::npos) key = key.substr(0, slash);
  return key;
}

bool IsDockerHubAlias(const std::string& host) {
  return host == "docker.io" || host == "index.docker.io" || host == "registry-1.docker.io";
}

}  // namespace

std::optional<std::string> Base64Decode(std::string_view text) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+') v = 62;
    else if (c == '/') v = 63;
    else if (c == '=' || c == '\n' || c == '\r') continue;
    else return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

std::string DockerConfigPath() {
  if (const char* dir = std::getenv("DOCKER_CONFIG"); dir != nullptr && *dir != '\0')
    return std::string(dir) + "/config.json";
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && *home != '\0' ? home : "/root") + "/.docker/config.json";
}

Result<CredentialLookup> FindCredentials(std::string_view config_text, const std::string& path,
                                         const std::string& registry) {
  CredentialLookup out;
  out.config_path = path;
  JsonLimits limits;
  limits.max_bytes = 1 << 20;
  auto parsed = ParseBoundedJson(config_text, limits);
  if (!parsed.ok() || !parsed->is_object())
    return Error::InvalidArgument("docker_config", "the Docker config " + path + " is not a JSON object: fix or remove it");
  const auto& cfg = *parsed;
  bool hub = IsDockerHubAlias(registry);
  auto matches = [&](const std::string& key) {
    std::string h = KeyHost(key);
    return h == registry || (hub && IsDockerHubAlias(h));
  };
  if (auto it = cfg.find("auths"); it != cfg.end() && it->is_object()) {
    for (const auto& [key, entry] : it->items()) {
      if (!matches(key) || !entry.is_object()) continue;
      std::string where = path + " auths.\"" + key + "\"";
      std::string auth = JsonStringOr(entry, "auth", "");
      if (auth.empty()) {
        if (!JsonStringOr(entry, "identitytoken", "").empty())
          out.note = where + " holds an identity token, which llm-sandbox does not use";
        continue;
      }
      auto decoded = Base64Decode(auth);
      auto colon = decoded ? decoded->find(':') : std::string::npos;
      if (!decoded || colon == std::string::npos)
        return Error::InvalidArgument("docker_config", where + ".auth is not base64 of user:password; run `docker login " +
                                                           registry + "` again or fix the file");
      out.credentials = Credentials{decoded->substr(0, colon), decoded->substr(colon + 1), where};
      return out;
    }
  }
  if (auto it = cfg.find("credHelpers"); it != cfg.end() && it->is_object()) {
    for (const auto& [key, helper] : it->items())
      if (matches(key) && helper.is_string())
        out.note = path + " names the credential helper \"" + helper.get<std::string>() + "\" for " + key +
                   ", which llm-sandbox does not run";
  }
  if (out.note.empty() && cfg.contains("credsStore") && cfg["credsStore"].is_string())
    out.note = path + " keeps credentials in the store \"" + cfg["credsStore"].get<std::string>() +
               "\", which llm-sandbox does not run";
  return out;
}

Result<CredentialLookup> LoadCredentials(const std::string& registry) {
  std::string path = DockerConfigPath();
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return CredentialLookup{};
  auto text = ReadFile(path);
  if (!text.ok()) return text.error().Wrap("read the Docker config");
  return FindCredentials(*text, path, registry);
}

}  // namespace lsb::image::registry
