// container: the box's image, root, user, environment and runtime (docs/policy.md "container").
// Its mounts are in container_mounts.cc, its build in build_section.cc.
#include <cstdint>
#include <string>

#include "policy/env_rules.h"
#include "policy/parser/section_context.h"
#include "policy/parser/section_keys.h"

namespace lsb::policy_parser {

void SectionParser::Container(const Field& f) {
  const std::string key = f.key.Scalar();
  if (key == "runtime") {
    std::string text;
    Choice(f, ContainerRuntimeSpellings(), text, "runsc is gVisor, Docker backend only");
    if (auto runtime = ParseContainerRuntime(text)) p_.runtime = *runtime;
  } else if (key == "pull") {
    Choice(f, {"missing", "always", "never"}, p_.pull,
           "when the native backend fetches an image its store lacks; missing is the default");
  } else if (key == "read_only") {
    SetIfValid(f, p_.read_only, r_.Bool(f), [](bool b) -> std::optional<Problem> {
      if (b) return std::nullopt;
      return Problem{"false is refused: the root is always read-only",
                     "remove the line or write true; a writable root would let a program write an executable "
                     "and run it. Add a tmpfs mount for the paths that must be writable"};
    });
  } else if (key == "tmpfs") {
    Tmpfs(f);
  } else if (key == "mounts") {
    Mounts(f);
  } else if (key == "seccomp") {
    SetIfValid(f, p_.seccomp, r_.String(f), [](const std::string& s) -> std::optional<Problem> {
      if (s == "default") return std::nullopt;
      return Problem{"unknown profile '" + s + "'",
                     "write seccomp: default (the only profile: the sandbox never runs without its filter; "
                     "docs/policy.md lists what it refuses)"};
    });
  } else if (key == "user") {
    User(f);
  } else if (key == "workdir") {
    SetIfValid(f, p_.workdir, r_.String(f), [](const std::string& s) -> std::optional<Problem> {
      std::string why;
      if (IsCleanAbsolutePath(s, &why)) return std::nullopt;
      return Problem{"'" + s + "' " + why, "write an absolute path such as /tmp"};
    });
  } else if (key == "env") {
    Env(f);
  } else if (key == "build") {
    p_.positions[f.path] = r_.Pos(f.mark());
    r_.ForEachKnownKey(f, kBuildKeys, [&](const Field& b) { Build(b); });
    BuildNetworkDefaults(f);
  } else {
    Unread(f);
  }
}

void SectionParser::User(const Field& f) {
  auto s = r_.String(f);
  if (!s) return;
  auto number = [](const std::string& t, uint32_t* out) {
    if (t.empty() || t.size() > 10 || t.find_first_not_of("0123456789") != std::string::npos) return false;
    uint64_t v = std::stoull(t);
    if (v >= 0xffffffffull) return false;
    *out = static_cast<uint32_t>(v);
    return true;
  };
  size_t colon = s->find(':');
  uint32_t uid = 0, gid = 0;
  bool ok = number(s->substr(0, colon), &uid) &&
            (colon == std::string::npos ? (gid = uid, true) : number(s->substr(colon + 1), &gid));
  if (!ok) {
    r_.Report(f.mark(), "container.user: '" + *s + "' is not a numeric \"uid:gid\"",
              "write user: \"1000:1000\" (numbers: names mean different users in different images)");
    return;
  }
  if (uid == 0 || gid == 0) {
    r_.Report(f.mark(), "container.user: '" + *s + "' runs as root (uid or gid 0), which is refused",
              "write an unprivileged id such as user: \"1000:1000\"; root inside the box is never needed");
    return;
  }
  p_.uid = uid;
  p_.gid = gid;
  p_.positions[f.path] = r_.Pos(f.mark());
}

void SectionParser::Env(const Field& f) {
  p_.positions[f.path] = r_.Pos(f.mark());
  r_.ForEachEntry(f, [&](const std::string& name, const Field& e) {
    std::string value;
    if (!e.value.IsScalar() && !e.value.IsNull()) {
      r_.Report(e.mark(), e.path + ": expected a value, got " + YamlReader::KindOf(e.value),
                "write " + name + ": \"VALUE\"");
      return;
    }
    if (e.value.IsScalar()) value = e.value.Scalar();
    // The same rules as for a request's env (policy/env_rules.h), less the request-only ones.
    if (auto refusal = env::Refuse(name, value, env::Source::kPolicy)) {
      r_.Report(e.key.Mark(), "container.env: " + name + ": " + refusal->why, refusal->fix);
      return;
    }
    p_.env[name] = std::move(value);
  });
  auto bounds = env::CheckRunEnv(p_.env);
  if (!bounds.ok()) r_.Report(f.mark(), "container." + bounds.error().message, "set fewer or shorter variables");
}

}  // namespace lsb::policy_parser
