// network: whether the box reaches anything, the egress allow/deny lists and the headers the proxy
// adds (docs/network.md).
#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <string_view>

#include "policy/network_rules.h"
#include "policy/parser/section_context.h"
#include "policy/parser/section_keys.h"

namespace lsb::policy_parser {

void SectionParser::Network(const Field& f) {
  const std::string key = f.key.Scalar();
  if (key == "secrets") {
    Secrets(f);
  } else if (key == "allow" || key == "deny") {
    NetworkList(f, key == "allow" ? p_.network_allow : p_.network_deny);
  } else {
    Unread(f);
  }
}

// network.allow / network.deny: each entry a name, "*.name", "*" or an address, with ":port".
void SectionParser::NetworkList(const Field& f, std::vector<std::string>& list) {
  auto items = r_.ScalarList(f);
  if (!items) return;
  p_.positions[f.path] = r_.Pos(f.mark());
  std::set<std::string> seen;
  for (const Field& item : *items) {
    const std::string& text = item.value.Scalar();
    auto rule = ParseNetworkRule(text);
    if (!rule.ok()) {
      const std::string& why = rule.error().message;  // some reasons name the entry already
      r_.Report(item.value.Mark(),
                f.path + ": " + (why.find("'" + text + "'") == 0 ? why : "'" + text + "': " + why),
                "write a host name (pypi.org), a wildcard (*.github.com: the names below it), \"*\" (every "
                "name) or an address (10.1.2.3, [2001:db8::1], 10.0.0.0/8), each with an optional :PORT");
      continue;
    }
    if (!seen.insert(rule->text).second) {
      r_.Report(item.value.Mark(), f.path + ": '" + text + "' is listed twice", "remove one of the two entries");
      continue;
    }
    list.push_back(rule->text);
  }
}

void SectionParser::Secrets(const Field& f) {
  if (!f.value.IsSequence()) {
    r_.Report(f.mark(), f.path + ": expected a list, got " + YamlReader::KindOf(f.value),
              "write one '- host: NAME' entry with header: and value: per secret");
    return;
  }
  p_.positions[f.path] = r_.Pos(f.mark());
  for (size_t i = 0; i < f.value.size(); ++i) {
    Field item{f.path + "[" + std::to_string(i) + "]", f.key, f.value[i]};
    NetworkSecret secret;
    size_t errors_before = r_.diagnostics().size();
    r_.ForEachKnownKey(item, kSecretKeys, [&](const Field& k) { SecretField(k, secret); });
    if (r_.diagnostics().size() != errors_before) continue;
    if (secret.host.empty() || secret.header.empty() || secret.value.empty()) {
      r_.Report(item.mark(), item.path + ": a secret needs host, header and value",
                "write - host: api.example.com, header: Authorization, value: \"Bearer ${TOKEN}\"");
      continue;
    }
    p_.network_secrets.push_back(std::move(secret));
  }
}

void SectionParser::SecretField(const Field& k, NetworkSecret& secret) {
  auto s = r_.String(k);
  if (!s) return;
  const std::string key = k.key.Scalar();
  if (key == "host") {
    auto n = NormalizeHostName(*s);
    if (!n.ok()) {
      r_.Report(k.mark(), k.path + ": '" + *s + "': " + n.error().message,
                "write the one host name the header is sent to (no wildcard, no port), e.g. api.example.com");
      return;
    }
    secret.host = *n;
  } else if (key == "header") {
    bool token = std::all_of(s->begin(), s->end(), [](unsigned char c) {
      return std::isalnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
    });
    if (!token) {
      r_.Report(k.mark(), k.path + ": '" + *s + "' is not an HTTP header name", "write a name such as Authorization");
      return;
    }
    secret.header = *s;
  } else {
    auto vars = SecretVariables(*s);
    if (!vars.ok()) {
      r_.Report(k.mark(), k.path + ": " + vars.error().message,
                "write the value with ${NAME} for each part taken from the daemon's environment, e.g. "
                "\"Bearer ${EXAMPLE_TOKEN}\"; a secret's value is never written into the policy itself");
      return;
    }
    if (vars->empty()) {
      r_.Report(k.mark(), k.path + ": the value names no ${VARIABLE}",
                "take the secret from the daemon's environment, e.g. \"Bearer ${EXAMPLE_TOKEN}\", so it is not "
                "stored in the policy file");
      return;
    }
    secret.value = *s;
  }
}

}  // namespace lsb::policy_parser
