#include "egress/secrets.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "base/io.h"
#include "policy/network_rules.h"

namespace lsb::egress {
namespace {

bool IsVariableName(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (unsigned char c : s)
    if (!std::isalnum(c) && c != '_') return false;
  return true;
}

}  // namespace

Result<std::map<std::string, std::string>> ReadSecretsFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Error::FromErrno("--secrets-file '" + path + "'");
  if (!S_ISREG(st.st_mode)) return Error::InvalidArgument("secrets-file", "--secrets-file '" + path + "' is not a regular file");
  if (st.st_mode & 077)
    return Error::InvalidArgument("secrets-file", "--secrets-file '" + path +
                                                      "' is readable or writable by group or others; chmod 600 it");
  if (static_cast<uint64_t>(st.st_size) > kMaxSecretsFileBytes)
    return Error::InvalidArgument("secrets-file", "--secrets-file '" + path + "' is over 1 MiB");
  LSB_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  std::map<std::string, std::string> out;
  size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#') continue;
    size_t eq = line.find('=');
    const std::string where = "--secrets-file '" + path + "' line " + std::to_string(line_no);
    if (eq == std::string_view::npos || !IsVariableName(line.substr(0, eq)))
      return Error::InvalidArgument("secrets-file", where + ": write NAME=value (NAME: letters, digits and '_')");
    std::string name(line.substr(0, eq));
    if (!out.emplace(name, std::string(line.substr(eq + 1))).second)
      return Error::InvalidArgument("secrets-file", where + ": " + name + " is set twice");
  }
  return out;
}

Result<std::vector<HeaderSecret>> ResolveSecrets(const std::vector<NetworkSecret>& secrets,
                                                 const std::map<std::string, std::string>& file_values,
                                                 const std::string& file_name) {
  std::vector<HeaderSecret> out;
  for (size_t i = 0; i < secrets.size(); ++i) {
    const NetworkSecret& s = secrets[i];
    const std::string entry = "network.secrets[" + std::to_string(i) + "] (" + s.host + ", " + s.header + ")";
    std::string value;
    std::vector<std::string> parts;
    for (size_t k = 0; k < s.value.size(); ++k) {
      if (s.value[k] != '$') {
        value += s.value[k];
        continue;
      }
      if (k + 1 < s.value.size() && s.value[k + 1] == '$') {
        value += '$';
        ++k;
        continue;
      }
      size_t close = s.value.find('}', k);
      if (k + 1 >= s.value.size() || s.value[k + 1] != '{' || close == std::string::npos)
        return Error::InvalidArgument("network.secrets", entry + ": a '$' must start ${NAME} or be written $$");
      std::string name = s.value.substr(k + 2, close - k - 2);
      k = close;
      const char* env = nullptr;
      if (auto f = file_values.find(name); f != file_values.end()) {
        parts.push_back(f->second);
      } else if ((env = std::getenv(name.c_str())) != nullptr) {
        parts.emplace_back(env);
      } else {
        return Error::InvalidArgument(
            "network.secrets", entry + " needs ${" + name + "}, which is set in neither " +
                                   (file_name.empty() ? std::string("a secrets file (none given; --secrets-file)")
                                                      : "the secrets file '" + file_name + "'") +
                                   " nor the environment of this daemon or CLI: set it there (never in the box)");
      }
      value += parts.back();
    }
    if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos)
      return Error::InvalidArgument("network.secrets", entry + ": the value holds a CR, LF or NUL, which would split the header");
    if (value.size() > kMaxSecretBytes)
      return Error::InvalidArgument("network.secrets", entry + ": the value is over 8 KiB");
    if (value.empty()) return Error::InvalidArgument("network.secrets", entry + ": the value is empty");
    std::vector<std::string> masked{value};
    for (std::string& p : parts)
      if (p.size() >= kMinMaskedBytes && std::find(masked.begin(), masked.end(), p) == masked.end())
        masked.push_back(std::move(p));
    out.push_back(HeaderSecret{s.host, s.header, std::move(value), std::move(masked)});
  }
  return out;
}

std::vector<const HeaderSecret*> SecretsFor(const std::vector<HeaderSecret>& secrets, std::string_view host) {
  std::vector<const HeaderSecret*> out;
  for (const HeaderSecret& s : secrets)
    if (s.host == host) out.push_back(&s);
  return out;
}

}  // namespace lsb::egress
