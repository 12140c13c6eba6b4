#include "server/json_codec.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <set>

#include "policy/network_rules.h"
#include "policy/units.h"
#include "server/unknown_field.h"

namespace lsb::server {
namespace {

using nlohmann::json;

ApiError Field(const std::string& where, const std::string& name, const std::string& what) {
  return BadRequest(where + name + ": " + what);
}

bool Present(const json& j, const char* key) { return j.contains(key) && !j.at(key).is_null(); }

ApiOr<std::optional<std::string>> OptString(const json& j, const char* key, const std::string& where) {
  if (!Present(j, key)) return std::optional<std::string>();
  if (!j.at(key).is_string()) return Field(where, key, "must be a string");
  return std::optional<std::string>(j.at(key).get<std::string>());
}

// Seconds as a number (2, 0.5) or a duration string ("30s", "500ms"), to milliseconds.
ApiOr<std::optional<uint64_t>> OptSeconds(const json& j, const char* key, const std::string& where) {
  if (!Present(j, key)) return std::optional<uint64_t>();
  const json& v = j.at(key);
  if (v.is_number()) {
    double s = v.get<double>();
    if (!std::isfinite(s) || s <= 0) return Field(where, key, "must be a positive number of seconds");
    if (s > 1e9) return Field(where, key, "is too large");
    return std::optional<uint64_t>(std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(s * 1000.0))));
  }
  if (v.is_string()) {
    auto ms = units::ParseDurationMs(v.get<std::string>());
    if (!ms.ok()) return Field(where, key, ms.error().message);
    if (*ms == 0) return Field(where, key, "must be positive");
    return std::optional<uint64_t>(*ms);
  }
  return Field(where, key, "must be a number of seconds");
}

// The grace between SIGTERM and SIGKILL at a timeout: seconds or a duration, 0 allowed.
ApiOr<std::optional<uint64_t>> OptGrace(const json& j, const char* key, const std::string& where) {
  if (!Present(j, key)) return std::optional<uint64_t>();
  const json& v = j.at(key);
  if (v.is_number() && v.get<double>() == 0) return std::optional<uint64_t>(0);
  if (v.is_string()) {
    auto ms = units::ParseDurationMs(v.get<std::string>());
    if (ms.ok() && *ms == 0) return std::optional<uint64_t>(0);
  }
  return OptSeconds(j, key, where);
}

const std::set<std::string>& KnownExecuteKeys(bool session) {
  static const std::set<std::string> one = {"code", "language", "policy", "stdin", "timeout", "timeout_grace",
                                            "memory", "cpu", "env", "files", "network", "command", "collect",
                                            "network_allow", "outputs", "changes"};
  static const std::set<std::string> ses = {"code", "language", "stdin", "timeout", "env", "command", "collect", "outputs"};
  return session ? ses : one;
}

// A JSON array of strings, each field error naming its index ("command[2]: must be a string").
ApiOr<std::vector<std::string>> StringList(const json& v, const std::string& where, const std::string& name) {
  if (!v.is_array()) return Field(where, name, "must be an array of strings");
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) return Field(where, name + "[" + std::to_string(i) + "]", "must be a string");
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

std::string Base64Decode(const std::string& in, bool* ok) {
  int table[256];
  for (int& t : table) t = -1;
  for (int i = 0; i < 64; ++i) table[static_cast<unsigned char>(kB64[i])] = i;
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  *ok = true;
  for (char c : in) {
    if (c == '=') {
      ++pad;
      continue;
    }
    if (c == '\n' || c == '\r' || c == ' ') continue;
    int v = table[static_cast<unsigned char>(c)];
    if (v < 0 || pad) {
      *ok = false;
      return {};
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  if (pad > 2) *ok = false;
  return out;
}

ApiError JsonRefusal(const JsonError& e, const std::string& what) {
  switch (e.kind) {
    case JsonErrorKind::kTooLarge:
    case JsonErrorKind::kTooManyElements: return {ApiCode::kPayloadTooLarge, what + ": " + e.message};
    case JsonErrorKind::kTooDeep: return BadRequest(what + ": " + e.message);
    case JsonErrorKind::kSyntax: break;
  }
  return BadRequest(what + " is " + e.message + "; send a JSON object");
}

JsonLimits RequestJsonLimits() {
  JsonLimits l;
  l.max_bytes = SIZE_MAX;  // the HTTP server's --max-body (413) bounds a body before it is read
  return l;
}

ApiOr<json> ParseObject(const std::string& body) {
  ParsedJson j = ParseBoundedJson(body, RequestJsonLimits());
  if (!j.ok()) return JsonRefusal(j.error(), "the request body");
  if (!j->is_object()) return BadRequest("the request body must be a JSON object");
  return std::move(j).value();
}

namespace {

// Each part of an execute body below fills its fields of `b`; an error is the first field at
// fault. ParseExecuteBody calls them in the order the body's fields were always checked.
using Problem = std::optional<ApiError>;

Problem CheckExecuteKeys(const json& j, bool session, const std::string& where) {
  const auto& known = KnownExecuteKeys(session);
  for (const auto& [k, _] : j.items())
    if (!known.count(k)) {
      if (session && k == "changes")
        return Field(where, k, "is not available in a session yet; run the program as a one-shot execution "
                               "(POST /v1/execute with files and changes) to get its change set");
      if (session && (k == "policy" || k == "memory" || k == "cpu" || k == "files"))
        return Field(where, k, "cannot be set per execution in a session; set it when creating the session");
      return UnknownField(where, k, {known.begin(), known.end()});
    }
  return std::nullopt;
}

// code or command, exactly one.
Problem ParseProgram(const json& j, const std::string& where, ExecuteBody& b) {
  if (Present(j, "code") == Present(j, "command"))
    return Field(where, "code", Present(j, "code") ? "give exactly one of code and command, not both"
                                                   : "is required (the program text), or give command (a program and its arguments)");
  if (Present(j, "code")) {
    if (!j.at("code").is_string()) return Field(where, "code", "must be a string");
    b.code = j.at("code").get<std::string>();
    return std::nullopt;
  }
  auto cmd = StringList(j.at("command"), where, "command");
  if (!cmd.ok()) return cmd.error();
  if (cmd->empty()) return Field(where, "command", "is empty; give a program and its arguments, such as [\"python3\", \"-m\", \"unittest\"]");
  if (Present(j, "language")) return Field(where, "language", "does not apply to a command; leave it out");
  b.command = std::move(*cmd);
  return std::nullopt;
}

// What comes back besides the output: collected files, a change set, rich outputs.
Problem ParseReturns(const json& j, const std::string& where, ExecuteBody& b) {
  if (Present(j, "collect")) {
    auto c = StringList(j.at("collect"), where, "collect");
    if (!c.ok()) return c.error();
    if (c->empty()) return Field(where, "collect", "is empty; give paths or glob patterns such as \"/tmp/out/*.png\"");
    b.collect = std::move(*c);
  }
  if (Present(j, "changes")) {
    const json& c = j.at("changes");
    if (c.is_boolean()) {
      if (c.get<bool>()) b.changes = "";
    } else if (c.is_string() && !c.get<std::string>().empty()) {
      b.changes = c.get<std::string>();
    } else {
      return Field(where, "changes", "must be true (every writable path) or a directory such as \"/tmp/work\"");
    }
  }
  if (Present(j, "outputs")) {
    if (!j.at("outputs").is_boolean()) return Field(where, "outputs", "must be true or false (rich outputs: figures, displayed values)");
    b.outputs = j.at("outputs").get<bool>();
  }
  return std::nullopt;
}

// language, policy, stdin, timeout and its grace.
Problem ParseRunStrings(const json& j, const std::string& where, ExecuteBody& b) {
  auto lang = OptString(j, "language", where);
  if (!lang.ok()) return lang.error();
  b.language = lang->value_or("");
  auto pol = OptString(j, "policy", where);
  if (!pol.ok()) return pol.error();
  b.policy = pol->value_or("");
  auto in = OptString(j, "stdin", where);
  if (!in.ok()) return in.error();
  b.stdin_data = *in;
  auto t = OptSeconds(j, "timeout", where);
  if (!t.ok()) return t.error();
  b.overrides.timeout_ms = *t;
  auto grace = OptGrace(j, "timeout_grace", where);
  if (!grace.ok()) return grace.error();
  b.overrides.timeout_grace_ms = *grace;
  return std::nullopt;
}

// memory and cpu, each a number or a string with units.
Problem ParseResources(const json& j, const std::string& where, ExecuteBody& b) {
  if (Present(j, "memory")) {
    const json& m = j.at("memory");
    if (m.is_number_unsigned() || (m.is_number_integer() && m.get<int64_t>() > 0)) {
      b.overrides.memory_bytes = m.get<uint64_t>();
    } else if (m.is_string()) {
      auto v = units::ParseBytes(m.get<std::string>());
      if (!v.ok()) return Field(where, "memory", v.error().message);
      b.overrides.memory_bytes = *v;
    } else {
      return Field(where, "memory", "must be a size such as \"128M\" or a number of bytes");
    }
    if (*b.overrides.memory_bytes == 0) return Field(where, "memory", "must be positive");
  }
  if (Present(j, "cpu")) {
    const json& c = j.at("cpu");
    if (c.is_number()) {
      b.overrides.cpu = c.get<double>();
    } else if (c.is_string()) {
      auto v = units::ParseCpu(c.get<std::string>());
      if (!v.ok()) return Field(where, "cpu", v.error().message);
      b.overrides.cpu = *v;
    } else {
      return Field(where, "cpu", "must be a number of cores such as 0.5 or a string such as \"500m\"");
    }
    if (!std::isfinite(*b.overrides.cpu) || *b.overrides.cpu <= 0) return Field(where, "cpu", "must be positive");
  }
  return std::nullopt;
}

// network, network_allow and env.
Problem ParseNetworkAndEnv(const json& j, const std::string& where, ExecuteBody& b) {
  if (Present(j, "network")) {
    if (!j.at("network").is_boolean()) return Field(where, "network", "must be true or false");
    b.overrides.network_enabled = j.at("network").get<bool>();
  }
  if (Present(j, "network_allow")) {
    // Narrows the policy's network.allow (policy/tighten.h checks each entry is within it).
    const json& a = j.at("network_allow");
    if (!a.is_array() || a.size() > 256) return Field(where, "network_allow", "must be a list of at most 256 strings");
    std::vector<std::string> entries;
    for (const auto& e : a) {
      if (!e.is_string() || e.get_ref<const std::string&>().size() > 300)
        return Field(where, "network_allow", "must be a list of names such as \"pypi.org\" or \"*.github.com:443\"");
      entries.push_back(e.get<std::string>());
    }
    b.overrides.network_allow = std::move(entries);
  }
  if (Present(j, "env")) {
    const json& e = j.at("env");
    if (!e.is_object()) return Field(where, "env", "must be an object of strings");
    for (const auto& [k, v] : e.items()) {
      if (!v.is_string()) return Field(where, "env." + k, "must be a string");
      // Names and values are checked with the policy in hand (BuildRunSpec, policy/env_rules.h).
      b.env[k] = v.get<std::string>();
    }
  }
  return std::nullopt;
}

// One entry of files: its path and exactly one of content, content_base64, archive_base64.
ApiOr<FileBody> ParseFileEntry(const json& f, const std::string& where, const std::string& fw) {
  if (!f.is_object()) return Field(where, fw, "must be an object {path, content | content_base64 | archive_base64}");
  for (const auto& [k, _] : f.items())
    if (k != "path" && k != "content" && k != "content_base64" && k != "archive_base64")
      return UnknownField(where + fw + ".", k, {"path", "content", "content_base64", "archive_base64"});
  if (!Present(f, "path") || !f.at("path").is_string()) return Field(where, fw + ".path", "is required (a string)");
  FileBody fb;
  fb.path = f.at("path").get<std::string>();
  int given = Present(f, "content") + Present(f, "content_base64") + Present(f, "archive_base64");
  if (given != 1) return Field(where, fw, "give exactly one of content, content_base64 and archive_base64");
  if (Present(f, "archive_base64")) {
    if (!f.at("archive_base64").is_string()) return Field(where, fw + ".archive_base64", "must be a string");
    bool ok = false;
    fb.data = Base64Decode(f.at("archive_base64").get<std::string>(), &ok);
    if (!ok) return Field(where, fw + ".archive_base64", "is not valid base64");
    fb.archive = true;
  } else if (Present(f, "content")) {
    if (!f.at("content").is_string()) return Field(where, fw + ".content", "must be a string");
    fb.data = f.at("content").get<std::string>();
  } else {
    if (!f.at("content_base64").is_string()) return Field(where, fw + ".content_base64", "must be a string");
    bool ok = false;
    fb.data = Base64Decode(f.at("content_base64").get<std::string>(), &ok);
    if (!ok) return Field(where, fw + ".content_base64", "is not valid base64");
  }
  return fb;
}

Problem ParseFiles(const json& j, const std::string& where, ExecuteBody& b) {
  if (!Present(j, "files")) return std::nullopt;
  const json& fs = j.at("files");
  if (!fs.is_array()) return Field(where, "files", "must be an array of {path, content | content_base64 | archive_base64}");
  for (size_t i = 0; i < fs.size(); ++i) {
    auto fb = ParseFileEntry(fs[i], where, "files[" + std::to_string(i) + "]");
    if (!fb.ok()) return fb.error();
    b.files.push_back(std::move(*fb));
  }
  return std::nullopt;
}

}  // namespace

ApiOr<ExecuteBody> ParseExecuteBody(const json& j, bool session, const std::string& where) {
  if (!j.is_object()) return BadRequest(where.empty() ? "the body must be a JSON object" : where + " must be a JSON object");
  if (auto bad = CheckExecuteKeys(j, session, where)) return *bad;
  ExecuteBody b;
  for (auto part : {ParseProgram, ParseReturns, ParseRunStrings, ParseResources, ParseNetworkAndEnv, ParseFiles})
    if (auto bad = part(j, where, b)) return *bad;
  return b;
}

ApiOr<SessionBody> ParseSessionBody(const json& j) {
  static const std::set<std::string> known = {"policy", "idle_timeout", "max_lifetime", "language", "setup", "changes"};
  for (const auto& [k, _] : j.items())
    if (!known.count(k)) return UnknownField("", k, {known.begin(), known.end()});
  SessionBody b;
  auto pol = OptString(j, "policy", "");
  if (!pol.ok()) return pol.error();
  b.policy = pol->value_or("");
  auto lang = OptString(j, "language", "");
  if (!lang.ok()) return lang.error();
  b.language = lang->value_or("");
  auto idle = OptSeconds(j, "idle_timeout", "");
  if (!idle.ok()) return idle.error();
  b.idle_timeout_ms = *idle;
  auto life = OptSeconds(j, "max_lifetime", "");
  if (!life.ok()) return life.error();
  b.max_lifetime_ms = *life;
  auto setup = OptString(j, "setup", "");
  if (!setup.ok()) return setup.error();
  b.setup = setup->value_or("");
  if (Present(j, "changes")) {
    if (!j.at("changes").is_boolean()) return Field("", "changes", "must be true or false (a baseline for GET /v1/sessions/{id}/changes)");
    b.changes = j.at("changes").get<bool>();
  }
  return b;
}

json ExecResultJson(const ExecResult& r, const std::string& policy, const std::string& node) {
  json j = r.ToJson();
  j["policy"] = policy;
  if (!node.empty()) j["node"] = node;
  return j;
}

json SessionJson(const sched::SessionInfo& s) {
  return {{"session_id", s.id},
          {"policy", s.policy},
          {"language", s.language},
          {"created_at", Rfc3339(s.created_at)},
          {"last_used_at", Rfc3339(s.last_used_at)},
          {"expires_at", Rfc3339(s.expires_at)},
          {"executions", s.executions},
          {"state", s.state},
          {"setup_ms", s.setup_ms ? json(*s.setup_ms) : json(nullptr)},
          {"resets", s.resets},
          {"snapshots", s.snapshots},
          {"warm", s.warm}};
}

json PolicyJson(const Policy& p) {
  json tmpfs = json::array();
  for (const auto& t : p.tmpfs)
    tmpfs.push_back({{"path", t.path}, {"size_bytes", t.size_bytes}, {"mode", t.mode}, {"noexec", t.noexec},
                     {"nosuid", t.nosuid}, {"nodev", t.nodev}, {"options", t.options}});
  json langs = json::object();
  for (const auto& [name, l] : p.languages) langs[name] = {{"command", l.command}, {"file_name", l.file_name}};
  // A secret's host, header and the variables it names: never the value as written, in case it
  // holds a literal part.
  json secrets = json::array();
  for (const auto& s : p.network_secrets) {
    auto vars = SecretVariables(s.value);
    secrets.push_back({{"host", s.host}, {"header", s.header},
                       {"variables", vars.ok() ? json(*vars) : json::array()}});
  }
  return {{"version", p.version},
          {"name", p.name},
          {"description", p.description},
          {"backend", Spelling(p.backend)},
          {"runtime", Spelling(p.runtime)},
          {"container",
           {{"image", p.image}, {"read_only", p.read_only}, {"tmpfs", tmpfs}, {"user_namespace", p.user_namespace},
            {"seccomp", p.seccomp}, {"uid", p.uid}, {"gid", p.gid}, {"workdir", p.workdir}, {"env", p.env}}},
          {"network",
           {{"enabled", p.network_enabled}, {"allow", p.network_allow}, {"deny", p.network_deny}, {"secrets", secrets}}},
          {"commands", {{"allow", p.allow}, {"deny", p.deny}, {"allow_presets", p.allow_presets}}},
          {"languages", langs},
          {"default_language", p.default_language},
          {"resources",
           {{"cpu", p.cpu}, {"memory_bytes", p.memory_bytes}, {"timeout_ms", p.timeout_ms},
            {"timeout_grace_ms", p.timeout_grace_ms}, {"pids", p.pids},
            {"output_bytes", p.output_bytes}, {"open_files", p.open_files}, {"file_size_bytes", p.file_size_bytes}}},
          {"monitoring", {{"trace", p.trace}}}};
}

}  // namespace lsb::server
