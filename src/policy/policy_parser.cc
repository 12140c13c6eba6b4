// YAML text -> Policy, one section per function, in the order of docs/policy.md. Each field is
// read on its own here; checks across fields live in policy_checks.cc.
#include <sys/socket.h>

#include <algorithm>
#include <functional>
#include <cctype>
#include <cstdint>
#include <set>
#include <tuple>

#include <sstream>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include "policy/alert_rules.h"
#include "policy/build_rules.h"
#include "policy/builtin_descriptions.h"
#include "policy/command_presets.h"
#include "policy/env_rules.h"
#include "policy/bounded_yaml.h"
#include "policy/languages.h"
#include "policy/network_rules.h"
#include "policy/policy_checks.h"
#include "policy/policy_loader.h"
#include "policy/suggest.h"
#include "policy/tmpfs_options.h"
#include "policy/units.h"
#include "policy/yaml_reader.h"
#include "protocol/messages.h"

namespace lsb {
namespace {

const std::vector<std::string> kTopKeys = {"version",  "name",      "description", "backend",   "container",
                                           "network",  "commands",  "languages",   "resources", "monitoring",
                                           "session"};
const std::vector<std::string> kSessionKeys = {"setup"};
// session.setup is Python source a session's interpreter runs once; bounded like a request's code.
constexpr size_t kMaxSessionSetupBytes = 64 << 10;
const std::vector<std::string> kContainerKeys = {"image",   "runtime", "gvisor_accept_weaker", "read_only", "tmpfs", "mounts",
                                                 "user_namespace", "seccomp", "user", "workdir", "env", "pull", "build"};
const std::vector<std::string> kBuildKeys = {"pip", "pip_index_url", "apt", "apt_sources", "files", "run", "network", "timeout", "memory", "output", "disk"};
const std::vector<std::string> kBuildNetworkKeys = {"allow", "deny"};
const std::vector<std::string> kNetworkKeys = {"enabled", "allow", "deny", "secrets"};
const std::vector<std::string> kSecretKeys = {"host", "header", "value"};
const std::vector<std::string> kCommandsKeys = {"allow", "deny"};
const std::vector<std::string> kResourcesKeys = {"cpu",    "memory",     "timeout",   "pids",
                                                 "output", "open_files", "file_size", "timeout_grace"};
const std::vector<std::string> kMonitoringKeys = {"trace", "alerts"};
const std::vector<std::string> kLanguageKeys = {"command", "file"};

constexpr uint64_t kDefaultMemory = 512ull << 20;
constexpr double kDefaultCpu = 1.0;

// "/usr/bin/python3" yes; "python3", "/usr//bin", "/usr/bin/../bin/sh", "/tmp/" no. Sets `why`.
bool IsCleanAbsolutePath(const std::string& path, std::string* why) {
  if (path.empty() || path[0] != '/') {
    *why = "is not an absolute path";
    return false;
  }
  if (path.find_first_of("*?[") != std::string::npos) {
    *why = "contains a wildcard; patterns are not supported";
    return false;
  }
  if (path.size() > 1 && path.back() == '/') {
    *why = "ends with '/'";
    return false;
  }
  size_t start = 1;
  while (start < path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    std::string part = path.substr(start, slash - start);
    if (part.empty() || part == "." || part == "..") {
      *why = "has an empty, '.' or '..' component";
      return false;
    }
    start = slash + 1;
  }
  return true;
}

bool IsUnder(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

// File order reads best: a person fixes a file top to bottom.
void SortByPosition(std::vector<PolicyDiagnostic>& diagnostics) {
  std::stable_sort(diagnostics.begin(), diagnostics.end(), [](const PolicyDiagnostic& a, const PolicyDiagnostic& b) {
    return std::tie(a.pos.line, a.pos.column) < std::tie(b.pos.line, b.pos.column);
  });
}

class Parser {
 public:
  Parser(YamlReader& reader, Policy& policy) : r_(reader), p_(policy) {}

  void Document(const YAML::Node& root) {
    Field top{"", YAML::Node(), root};
    if (!root || root.IsNull()) {
      r_.Report(SourcePos{r_.file(), 1, 1}, "the policy is empty",
                "start from policies/code-sandbox.yaml; a policy needs at least version: \"1.0\" and name:");
      return;
    }
    if (!root.IsMap()) {
      r_.Report(root.Mark(), "a policy is a mapping of sections, got " + YamlReader::KindOf(root),
                "start from policies/code-sandbox.yaml (version, name, container, network, commands, resources)");
      return;
    }
    bool have_version = false, have_name = false;
    r_.ForEachKnownKey(top, kTopKeys, [&](const Field& f) {
      const std::string& key = f.path;
      if (key == "version") {
        have_version = true;
        Version(f);
      } else if (key == "name") {
        have_name = true;
        Name(f);
      } else if (key == "description") {
        if (auto s = r_.String(f)) Set(f, p_.description, *s);
      } else if (key == "backend") {
        Choice(f, {"auto", "native", "docker"}, p_.backend,
               "auto lets llm-sandbox pick one at run time");
      } else if (key == "container") {
        r_.ForEachKnownKey(f, kContainerKeys, [&](const Field& c) { Container(c); });
      } else if (key == "network") {
        r_.ForEachKnownKey(f, kNetworkKeys, [&](const Field& n) { Network(n); });
      } else if (key == "commands") {
        r_.ForEachKnownKey(f, kCommandsKeys, [&](const Field& c) { Commands(c); });
      } else if (key == "languages") {
        Languages(f);
      } else if (key == "resources") {
        r_.ForEachKnownKey(f, kResourcesKeys, [&](const Field& c) { Resources(c); });
      } else if (key == "monitoring") {
        r_.ForEachKnownKey(f, kMonitoringKeys, [&](const Field& m) { Monitoring(m); });
      } else if (key == "session") {
        r_.ForEachKnownKey(f, kSessionKeys, [&](const Field& m) { SessionSetup(m); });
      }
    });
    if (!have_version) {
      r_.Report(root.Mark(), "missing key 'version'", "add version: \"1.0\" at the top of the file");
    }
    if (!have_name) {
      r_.Report(root.Mark(), "missing key 'name'",
                "add name: NAME at the top; a policy is looked up by name as NAME.yaml");
    }
  }

  const std::vector<std::string>& explicit_languages() const { return explicit_languages_; }

 private:
  template <typename T>
  void Set(const Field& f, T& slot, T value) {
    slot = std::move(value);
    p_.positions[f.path] = r_.Pos(f.mark());
  }

  void Choice(const Field& f, const std::vector<std::string>& options, std::string& slot, const std::string& note) {
    auto s = r_.String(f);
    if (!s) return;
    if (std::find(options.begin(), options.end(), *s) == options.end()) {
      std::string guess = ClosestMatch(*s, options);
      r_.Report(f.mark(), f.path + ": unknown value '" + *s + "'",
                (guess.empty() ? std::string() : "did you mean '" + guess + "'? ") + "write one of: " +
                    JoinList(options) + (note.empty() ? "" : " (" + note + ")"));
      return;
    }
    Set(f, slot, *s);
  }

  void Version(const Field& f) {
    auto s = r_.String(f);
    if (!s) return;
    if (*s != "1.0") {
      r_.Report(f.mark(), "version: unsupported policy version '" + *s + "'",
                "this llm-sandbox reads version \"1.0\"; write version: \"1.0\"");
      return;
    }
    Set(f, p_.version, *s);
  }

  void Name(const Field& f) {
    auto s = r_.String(f);
    if (!s) return;
    bool ok = s->size() <= 64 && std::isalnum(static_cast<unsigned char>((*s)[0])) &&
              std::all_of(s->begin(), s->end(), [](unsigned char c) { return std::isalnum(c) || c == '-' || c == '_' || c == '.'; });
    if (!ok) {
      r_.Report(f.mark(), "name: '" + *s + "' is not a valid policy name",
                "use letters, digits, '-', '_' and '.', starting with a letter or digit, at most 64 "
                "characters (it names the file NAME.yaml)");
      return;
    }
    Set(f, p_.name, *s);
  }

  void Container(const Field& f) {
    const std::string key = f.key.Scalar();
    if (key == "image") {
      if (auto s = r_.String(f)) Set(f, p_.image, *s);
    } else if (key == "runtime") {
      Choice(f, {"runc", "runsc"}, p_.runtime, "runsc is gVisor, Docker backend only");
    } else if (key == "pull") {
      Choice(f, {"missing", "always", "never"}, p_.pull,
             "when the native backend fetches an image its store lacks; missing is the default");
    } else if (key == "gvisor_accept_weaker") {
      if (auto b = r_.Bool(f)) Set(f, p_.gvisor_accept_weaker, *b);
    } else if (key == "read_only") {
      auto b = r_.Bool(f);
      if (!b) return;
      if (!*b) {
        r_.Report(f.mark(), "container.read_only: false is refused: the root is always read-only",
                  "remove the line or write true; a writable root would let a program write an executable "
                  "and run it. Add a tmpfs mount for the paths that must be writable");
        return;
      }
      Set(f, p_.read_only, *b);
    } else if (key == "tmpfs") {
      Tmpfs(f);
    } else if (key == "mounts") {
      Mounts(f);
    } else if (key == "user_namespace") {
      if (auto b = r_.Bool(f)) Set(f, p_.user_namespace, *b);
    } else if (key == "seccomp") {
      auto s = r_.String(f);
      if (!s) return;
      if (*s != "default") {
        r_.Report(f.mark(), "container.seccomp: unknown profile '" + *s + "'",
                  "write seccomp: default (the only profile: the sandbox never runs without its filter; "
                  "docs/policy.md lists what it refuses)");
        return;
      }
      Set(f, p_.seccomp, *s);
    } else if (key == "user") {
      User(f);
    } else if (key == "workdir") {
      auto s = r_.String(f);
      if (!s) return;
      std::string why;
      if (!IsCleanAbsolutePath(*s, &why)) {
        r_.Report(f.mark(), "container.workdir: '" + *s + "' " + why, "write an absolute path such as /tmp");
        return;
      }
      Set(f, p_.workdir, *s);
    } else if (key == "env") {
      Env(f);
    } else if (key == "build") {
      p_.positions[f.path] = r_.Pos(f.mark());
      r_.ForEachKnownKey(f, kBuildKeys, [&](const Field& b) { Build(b); });
      BuildNetworkDefaults(f);
    }
  }

  // container.build (docs/policy.md): each list bounded, each entry checked (policy/build_rules.h).
  void Build(const Field& f) {
    const std::string key = f.key.Scalar();
    BuildSpec& b = p_.build;
    auto list = [&](std::vector<std::string>& out, const std::function<Status(std::string_view)>& check,
                    const std::string& hint) {
      auto items = r_.ScalarList(f);
      if (!items) return;
      p_.positions[f.path] = r_.Pos(f.mark());
      if (items->size() > kMaxBuildEntries) {
        r_.Report(f.mark(), f.path + ": more than 256 entries", "merge entries or use fewer");
        return;
      }
      for (const Field& item : *items) {
        const std::string& text = item.value.Scalar();
        if (auto ok = check(text); !ok.ok()) {
          r_.Report(item.value.Mark(), item.path + ": " + ok.error().message, hint);
          continue;
        }
        out.push_back(text);
      }
    };
    if (key == "pip") {
      list(b.pip, CheckPipRequirement, "write requirement specifiers such as \"pandas==2.2.*\" or \"pytest>=8\"; "
           "the index is build.pip_index_url");
    } else if (key == "run") {
      list(b.run, [](std::string_view c) -> Status {
        if (c.empty() || c.size() > kMaxBuildEntryBytes) return Error{"a command of 1 to 4096 bytes is expected"};
        return OkStatus();
      }, "write one shell command per entry");
    } else if (key == "apt") {
      list(b.apt, CheckAptPackage, "write Debian package names such as \"git\" or \"curl=7.88.1-10+deb12u5\"; "
           "each is one word given to apt-get, never a shell");
    } else if (key == "apt_sources") {
      list(b.apt_sources, [](std::string_view line) -> Status {
        auto src = ParseAptSource(line);
        return src.ok() ? OkStatus() : Status(src.error());
      }, "write one-line sources.list entries such as \"deb [trusted=yes] http://apt.example/ ./\" or "
         "\"deb http://deb.debian.org/debian bookworm main\"");
      if (b.apt_sources.size() > kMaxAptSources) {
        r_.Report(f.mark(), f.path + ": more than 32 sources", "list fewer archives");
        b.apt_sources.resize(kMaxAptSources);
      }
    } else if (key == "pip_index_url") {
      auto s = r_.String(f);
      if (!s) return;
      auto url = ParseIndexUrl(*s);
      if (!url.ok()) {
        r_.Report(f.mark(), f.path + ": " + url.error().message, "write a URL such as https://pypi.org/simple");
        return;
      }
      Set(f, b.pip_index_url, *s);
    } else if (key == "files") {
      p_.positions[f.path] = r_.Pos(f.mark());
      r_.ForEachEntry(f, [&](const std::string& target, const Field& e) {
        if (b.files.size() >= kMaxBuildEntries) {
          r_.Report(e.key.Mark(), f.path + ": more than 256 entries", "copy directories instead of single files");
          return;
        }
        if (auto ok = CheckBuildTarget(target); !ok.ok()) {
          r_.Report(e.key.Mark(), f.path + ": target " + ok.error().message, "write an absolute path in the image such as /opt/fixtures/");
          return;
        }
        auto src = r_.String(e);
        if (!src) return;
        if (auto ok = CheckBuildSource(*src); !ok.ok()) {
          r_.Report(e.mark(), e.path + ": source " + ok.error().message,
                    "write a path relative to the policy file's directory, inside it (no '..', no absolute path)");
          return;
        }
        b.files.push_back({target, *src});
      });
    } else if (key == "network") {
      p_.positions[f.path] = r_.Pos(f.mark());
      r_.ForEachKnownKey(f, kBuildNetworkKeys, [&](const Field& n) {
        NetworkList(n, n.key.Scalar() == "allow" ? b.network_allow : b.network_deny);
      });
    } else if (key == "timeout") {
      auto s = r_.String(f);
      if (!s) return;
      auto ms = units::ParseDurationMs(*s);
      if (!ms.ok() || *ms == 0 || *ms > 24ull * 3600 * 1000) {
        r_.Report(f.mark(), f.path + ": '" + *s + "' is not a duration between 1s and 24h", "write e.g. 20m or 600s");
        return;
      }
      Set(f, b.timeout_ms, *ms);
    } else if (key == "memory" || key == "output" || key == "disk") {
      auto s = r_.String(f);
      if (!s) return;
      auto bytes = units::ParseBytes(*s);
      // build.disk: at least what an image's directories take when a step starts (they are made
      // in its upper layer), at most 1 TiB (a sparse file of that size on the store's filesystem).
      uint64_t min = key == "output" ? 4096 : (64ull << 20);
      uint64_t max = key == "disk" ? (1ull << 40) : UINT64_MAX;
      if (!bytes.ok() || *bytes < min || *bytes > max) {
        r_.Report(f.mark(), f.path + ": '" + *s + "' is not a size of at least " + units::FormatBytes(min) +
                  (key == "disk" ? " and at most 1T" : ""), "write e.g. 2G or 512M");
        return;
      }
      Set(f, key == "memory" ? b.memory_bytes : key == "output" ? b.output_bytes : b.disk_bytes, *bytes);
      if (key == "disk") b.disk_set = true;
    }
  }

  // build.network left out: the hosts the steps must reach, implicitly: the pip index's (and
  // files.pythonhosted.org, where pypi.org keeps its files), each build.apt_sources archive's, or
  // deb.debian.org for build.apt on the image's own sources. Written: it must reach the pip index
  // and every apt_sources archive, or the step could not work (the image's own sources cannot be
  // known here: they are the writer's to allow).
  void BuildNetworkDefaults(const Field& f) {
    BuildSpec& b = p_.build;
    if (!b.apt_sources.empty() && b.apt.empty()) {
      r_.Report(f.mark(), "container.build.apt_sources is written but container.build.apt lists no package",
                "add the packages to build.apt, or remove build.apt_sources");
      return;
    }
    struct Needed {
      std::string what;
      IndexUrl url;
    };
    std::vector<Needed> needed;
    if (!b.pip.empty()) {
      auto url = ParseIndexUrl(b.pip_index_url);
      if (!url.ok()) return;  // reported already
      needed.push_back({"build.pip_index_url", *url});
    }
    if (!b.apt.empty()) {
      for (const std::string& line : b.apt_sources)
        if (auto src = ParseAptSource(line); src.ok())
          needed.push_back({"the build.apt_sources archive " + src->uri, src->url});
    }
    const bool written = p_.positions.count("container.build.network") > 0;
    if (!written) {
      for (const Needed& n : needed) {
        auto ip = ParseIpLiteral(n.url.host);
        std::string entry = ip && ip->family == AF_INET6 ? "[" + n.url.host + "]" : n.url.host;
        if (n.url.port) entry += ":" + std::to_string(n.url.port);
        if (std::find(b.network_allow.begin(), b.network_allow.end(), entry) == b.network_allow.end())
          b.network_allow.push_back(entry);
        if (n.url.host == "pypi.org") b.network_allow.push_back("files.pythonhosted.org");
      }
      if (!b.apt.empty() && b.apt_sources.empty()) b.network_allow.push_back("deb.debian.org");
      return;
    }
    for (const Needed& n : needed) {
      if (Reaches(n.url)) continue;
      r_.Report(f.mark(), "container.build.network.allow does not reach " + n.what + "'s host '" + n.url.host + "'",
                "add '" + n.url.host + "' (an address needs its own entry, e.g. 127.0.0.1:8080) to build.network.allow, "
                "or leave build.network out to allow the build's own hosts only");
    }
  }

  // Whether build.network's lists let a step connect to `url`'s host and port.
  bool Reaches(const IndexUrl& url) const {
    const BuildSpec& b = p_.build;
    uint16_t port = url.port ? url.port : (url.scheme == "https" ? 443 : 80);
    auto ip = ParseIpLiteral(url.host);
    auto covers = [&](const std::string& text) {
      auto rule = ParseNetworkRule(text);
      return rule.ok() && (ip ? RuleCoversAddress(*rule, *ip, port) : RuleMatchesName(*rule, url.host, port));
    };
    for (const std::string& d : b.network_deny)
      if (covers(d)) return false;
    for (const std::string& a : b.network_allow)
      if (covers(a)) return true;
    return false;
  }

  void Tmpfs(const Field& f) {
    p_.positions[f.path] = r_.Pos(f.mark());
    r_.ForEachEntry(f, [&](const std::string& path, const Field& e) {
      std::string why;
      if (path == "/") {
        r_.Report(e.key.Mark(), "container.tmpfs: a tmpfs on '/' is refused",
                  "the root stays read-only; mount tmpfs on a directory such as /tmp");
        return;
      }
      if (!IsCleanAbsolutePath(path, &why)) {
        r_.Report(e.key.Mark(), "container.tmpfs: mount point '" + path + "' " + why,
                  "write an absolute path such as /tmp");
        return;
      }
      for (const char* reserved : {"/proc", "/sys", "/dev"}) {
        if (IsUnder(path, reserved)) {
          r_.Report(e.key.Mark(), "container.tmpfs: '" + path + "' is under " + reserved + ", which the sandbox builds itself",
                    "mount tmpfs elsewhere, e.g. /tmp or /home/sandbox");
          return;
        }
      }
      std::string text;
      if (e.value.IsScalar()) {
        text = e.value.Scalar();
      } else if (!e.value.IsNull()) {
        r_.Report(e.mark(), e.path + ": expected an option string such as \"size=100M,noexec,nosuid\", got " +
                                YamlReader::KindOf(e.value),
                  "write " + path + ": \"size=100M\"");
        return;
      }
      TmpfsMount mount;
      mount.path = path;
      auto problems = ParseTmpfsOptions(text, &mount);
      for (const auto& pr : problems) {
        r_.Report(r_.PosInScalar(e.value, pr.offset, pr.option), "container.tmpfs " + path + ": " + pr.message, pr.hint);
      }
      if (problems.empty()) {
        p_.tmpfs.push_back(mount);
        p_.positions["container.tmpfs." + path] = r_.Pos(e.mark());
      }
    });
  }

  // container.mounts: a list of {source, target, mode, size}. Where the source may come from is
  // the daemon's to say (--mount-root); here only the shape, and targets the sandbox owns.
  void Mounts(const Field& f) {
    p_.positions[f.path] = r_.Pos(f.mark());
    if (!f.value.IsSequence()) {
      r_.Report(f.mark(), f.path + ": expected a list, got " + YamlReader::KindOf(f.value),
                "write '- {source: /home/me/project, target: /workspace, mode: overlay}' per mount");
      return;
    }
    if (f.value.size() > kMaxHostMounts) {
      r_.Report(f.mark(), f.path + ": more than " + std::to_string(kMaxHostMounts) + " mounts",
                "mount a common parent directory instead");
      return;
    }
    for (size_t i = 0; i < f.value.size(); ++i) {
      Field item{f.path + "[" + std::to_string(i) + "]", f.key, f.value[i]};
      HostMount m;
      bool ok = true;
      r_.ForEachKnownKey(item, {"source", "target", "mode", "size"}, [&](const Field& k) {
        const std::string key = k.key.Scalar();
        auto s = r_.String(k);
        if (!s) {
          ok = false;
          return;
        }
        std::string why;
        if (key == "source" || key == "target") {
          if (!IsCleanAbsolutePath(*s, &why)) {
            r_.Report(k.mark(), k.path + ": '" + *s + "' " + why,
                      key == "source" ? "write the host directory's absolute path" : "write an absolute path such as /workspace");
            ok = false;
            return;
          }
          (key == "source" ? m.source : m.target) = *s;
        } else if (key == "mode") {
          if (*s != "ro" && *s != "overlay") {
            r_.Report(k.mark(), k.path + ": unknown mode '" + *s + "'",
                      "write ro (read-only) or overlay (writable; the box's writes never reach the host)");
            ok = false;
            return;
          }
          m.mode = *s;
        } else if (key == "size") {
          auto v = units::ParseBytes(*s);
          if (!v.ok() || *v < (1u << 20) || *v > (64ull << 30)) {
            r_.Report(k.mark(), k.path + ": '" + *s + "' is not a size from 1M to 64G", "write e.g. size: 512M");
            ok = false;
            return;
          }
          m.size_bytes = *v;
        }
      });
      if (!ok) continue;
      if (m.source.empty() || m.target.empty()) {
        r_.Report(item.value.Mark(), item.path + ": needs both source and target",
                  "write '- {source: /home/me/project, target: /workspace, mode: overlay}'");
        continue;
      }
      if (m.target == "/" || IsUnder(m.target, "/proc") || IsUnder(m.target, "/sys") || IsUnder(m.target, "/dev") ||
          IsUnder(m.target, protocol::kJobDir) || IsUnder(protocol::kJobDir, m.target)) {
        r_.Report(item.value.Mark(), item.path + ": target '" + m.target + "' is a path the sandbox builds itself (/, /proc, /sys, /dev, " +
                                         protocol::kJobDir + ")",
                  "mount elsewhere, e.g. /workspace");
        continue;
      }
      bool clash = false;
      for (const auto& other : p_.mounts)
        if (IsUnder(m.target, other.target) || IsUnder(other.target, m.target)) clash = true;
      if (clash) {
        r_.Report(item.value.Mark(), item.path + ": target '" + m.target + "' is inside (or holds) another mount's target",
                  "give each mount its own directory");
        continue;
      }
      p_.mounts.push_back(m);
      p_.positions[item.path] = r_.Pos(item.value.Mark());
    }
  }

  void User(const Field& f) {
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

  void Env(const Field& f) {
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

  void Network(const Field& f) {
    const std::string key = f.key.Scalar();
    if (key == "enabled") {
      if (auto b = r_.Bool(f)) Set(f, p_.network_enabled, *b);
    } else if (key == "secrets") {
      Secrets(f);
    } else {
      NetworkList(f, key == "allow" ? p_.network_allow : p_.network_deny);
    }
  }

  // network.allow / network.deny: each entry a name, "*.name", "*" or an address, with ":port".
  void NetworkList(const Field& f, std::vector<std::string>& list) {
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

  void Secrets(const Field& f) {
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

  void SecretField(const Field& k, NetworkSecret& secret) {
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

  void Commands(const Field& f) {
    auto items = r_.ScalarList(f);
    if (!items) return;
    std::vector<std::string>& list = f.key.Scalar() == "allow" ? p_.allow : p_.deny;
    p_.positions[f.path] = r_.Pos(f.mark());
    std::set<std::string> seen;
    for (size_t i = 0; i < items->size(); ++i) {
      const Field& item = (*items)[i];
      const std::string& path = item.value.Scalar();
      if (!path.empty() && path[0] == '@') {
        Preset(f, item, seen);
        continue;
      }
      std::string why;
      if (!IsCleanAbsolutePath(path, &why)) {
        r_.Report(item.value.Mark(), f.path + ": '" + path + "' " + why,
                  "write the executable's absolute path, e.g. /usr/bin/" +
                      path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1));
        continue;
      }
      if (!seen.insert(path).second) {
        r_.Report(item.value.Mark(), f.path + ": '" + path + "' is listed twice", "remove one of the two entries");
        continue;
      }
      p_.positions[f.path + "[" + std::to_string(list.size()) + "]"] = r_.Pos(item.value.Mark());
      list.push_back(path);
    }
  }

  // "@coreutils" in commands.allow: recorded here, expanded into paths after the whole file is read
  // (ExpandCommandPresets), so that commands.deny, wherever it is written, wins over it.
  void Preset(const Field& f, const Field& item, std::set<std::string>& seen) {
    const std::string& name = item.value.Scalar();
    if (f.key.Scalar() != "allow") {
      r_.Report(item.value.Mark(), f.path + ": '" + name + "': presets are for commands.allow only",
                "list the absolute paths to deny, e.g. /usr/bin/git");
      return;
    }
    if (!FindCommandPreset(name)) {
      std::vector<std::string> known;
      for (const auto& preset : CommandPresets()) known.push_back("@" + preset.name);
      std::string guess = ClosestMatch(name, known);
      r_.Report(item.value.Mark(), f.path + ": unknown preset '" + name + "'",
                (guess.empty() ? std::string() : "did you mean '" + guess + "'? ") + "the presets are: " +
                    CommandPresetNames() + " (docs/policy.md lists the commands of each)");
      return;
    }
    if (!seen.insert(name).second) {
      r_.Report(item.value.Mark(), f.path + ": '" + name + "' is listed twice", "remove one of the two entries");
      return;
    }
    p_.positions[f.path + "." + name] = r_.Pos(item.value.Mark());
    p_.allow_presets.push_back(name);
  }

  void Languages(const Field& f) {
    p_.positions[f.path] = r_.Pos(f.mark());
    r_.ForEachEntry(f, [&](const std::string& name, const Field& e) {
      if (name == "default") {
        if (auto s = r_.String(e)) Set(e, p_.default_language, *s);
        return;
      }
      bool ok = !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
        return std::islower(c) || std::isdigit(c) || c == '_' || c == '-' || c == '+';
      });
      if (!ok) {
        r_.Report(e.key.Mark(), "languages: '" + name + "' is not a valid language name",
                  "use lower-case letters, digits, '_', '-' or '+' (e.g. python, node, cpp)");
        return;
      }
      auto builtin = BuiltinLanguages().find(name);
      Language lang = builtin != BuiltinLanguages().end() ? builtin->second : Language{name, {}, ""};
      bool have_command = false, have_file = false, bad = false;
      size_t errors_before = r_.diagnostics().size();
      r_.ForEachKnownKey(e, kLanguageKeys, [&](const Field& k) {
        if (k.key.Scalar() == "command") {
          auto items = r_.ScalarList(k);
          if (!items) return;
          have_command = true;
          lang.command.clear();
          for (const auto& item : *items) lang.command.push_back(item.value.Scalar());
          if (lang.command.empty()) {
            r_.Report(k.mark(), k.path + ": the command is empty",
                      "write command: [\"/usr/bin/ruby\", \"{file}\"] (interpreter path first)");
            bad = true;
            return;
          }
          std::string why;
          if (!IsCleanAbsolutePath(lang.command[0], &why)) {
            r_.Report((*items)[0].value.Mark(), k.path + ": the interpreter '" + lang.command[0] + "' " + why,
                      "write its absolute path first (e.g. /usr/bin/" + lang.command[0] +
                          "); it must also be in commands.allow");
            bad = true;
            return;
          }
          bool mentions_file = std::any_of(lang.command.begin(), lang.command.end(),
                                           [](const std::string& a) { return a.find("{file}") != std::string::npos; });
          if (!mentions_file) {
            r_.Report(k.mark(), k.path + ": no argument contains {file}, so the program would never be read",
                      "add \"{file}\" where the program's path goes, e.g. [\"" + lang.command[0] + "\", \"{file}\"]");
            bad = true;
            return;
          }
          p_.positions[k.path] = r_.Pos(k.mark());
        } else {
          auto s = r_.String(k);
          if (!s) return;
          if (s->find('/') != std::string::npos || *s == "." || *s == "..") {
            r_.Report(k.mark(), k.path + ": '" + *s + "' must be a plain file name", "write e.g. file: main.rb");
            bad = true;
            return;
          }
          have_file = true;
          lang.file_name = *s;
          p_.positions[k.path] = r_.Pos(k.mark());
        }
      });
      if (bad || r_.diagnostics().size() != errors_before) return;
      if (builtin == BuiltinLanguages().end() && (!have_command || !have_file)) {
        r_.Report(e.key.Mark(), "languages." + name + ": a new language needs both 'command' and 'file'",
                  "write " + name + ": {command: [\"/usr/bin/" + name + "\", \"{file}\"], file: main." + name + "}");
        return;
      }
      p_.languages[name] = lang;
      p_.positions["languages." + name] = r_.Pos(e.key.Mark());
      explicit_languages_.push_back(name);
    });
  }

  void Resources(const Field& f) {
    const std::string key = f.key.Scalar();
    if (!f.value.IsScalar() || f.value.Scalar().empty()) {
      r_.Report(f.mark(), f.path + ": expected a single value, got " + YamlReader::KindOf(f.value),
                "write " + key + ": VALUE on one line (docs/policy.md lists the units)");
      return;
    }
    const std::string& text = f.value.Scalar();
    if (key == "cpu") {
      auto v = units::ParseCpu(text);
      if (!v.ok()) return Bad(f, v.error().message, "write cpu: 0.5 (half a core), cpu: 2 or cpu: \"500m\"");
      if (*v <= 0) return Bad(f, "must be more than 0", "write the number of cores the program may use, e.g. 0.5");
      if (*v < kMinCpu) return Bad(f, "must be at least 0.01 (10m)", "the kernel's and Docker's smallest CPU quota is 0.01 of a core");
      Set(f, p_.cpu, *v);
    } else if (key == "memory" || key == "output" || key == "file_size") {
      auto v = units::ParseBytes(text);
      if (!v.ok()) return Bad(f, v.error().message, "write a size such as 256M (MiB), 1G, 512k or a number of bytes");
      if (*v == 0) return Bad(f, "must be more than 0", "write a size such as " + std::string(key == "memory" ? "256M" : "1M"));
      if (key == "memory" && *v < kMinMemoryBytes)
        return Bad(f, "must be at least " + units::FormatBytes(kMinMemoryBytes),
                   "below it the box itself cannot start (init and the interpreter need memory too)");
      uint64_t& slot = key == "memory" ? p_.memory_bytes : key == "output" ? p_.output_bytes : p_.file_size_bytes;
      Set(f, slot, *v);
    } else if (key == "timeout") {
      auto v = units::ParseDurationMs(text);
      if (!v.ok()) return Bad(f, v.error().message, "write timeout: 30 (seconds), \"30s\", \"500ms\" or \"2m\"");
      if (*v == 0) return Bad(f, "must be more than 0", "write a wall-clock limit such as 30s");
      Set(f, p_.timeout_ms, *v);
    } else if (key == "timeout_grace") {
      auto v = units::ParseDurationMs(text);
      if (!v.ok()) return Bad(f, v.error().message, "write timeout_grace: 2s (SIGTERM, then SIGKILL 2 s later), or 0 for SIGKILL at once");
      if (*v > protocol::kMaxTimeoutGraceMs)
        return Bad(f, "must be at most " + units::FormatDurationMs(protocol::kMaxTimeoutGraceMs),
                   "the grace only lets a program flush its output after SIGTERM; write e.g. 2s");
      Set(f, p_.timeout_grace_ms, *v);
    } else if (key == "pids" || key == "open_files") {
      bool digits = text.find_first_not_of("0123456789") == std::string::npos && text.size() <= 9;
      if (!digits) {
        return Bad(f, "'" + text + "' is not a whole number" + (text[0] == '-' ? " (it is negative)" : ""),
                   "write a plain count such as " + key + ": " + (key == "pids" ? "128" : "256"));
      }
      uint64_t v = std::stoull(text);
      uint64_t minimum = key == "pids" ? 2 : 3;
      if (v < minimum) {
        return Bad(f, "must be at least " + std::to_string(minimum),
                   key == "pids" ? "llm-sandbox-init counts as one process of the box; allow at least 2, e.g. 64"
                                 : "stdin, stdout and stderr take 3; allow e.g. 256");
      }
      if (key == "pids") {
        Set(f, p_.pids, static_cast<uint32_t>(v));
      } else {
        Set(f, p_.open_files, v);
      }
    }
  }

  void SessionSetup(const Field& f) {
    auto code = r_.String(f);
    if (!code) return;
    if (code->size() > kMaxSessionSetupBytes) {
      r_.Report(f.mark(), "session.setup is " + std::to_string(code->size()) + " bytes; the limit is " +
                              std::to_string(kMaxSessionSetupBytes),
                "keep the setup to imports and small state; ship data as files instead");
      return;
    }
    Set(f, p_.session_setup, *code);
  }

  void Monitoring(const Field& f) {
    if (f.key.Scalar() == "trace") {
      if (auto b = r_.Bool(f)) Set(f, p_.trace, *b);
      return;
    }
    // alerts: {RULE: info|warning|critical|off}; the rule names are fixed.
    std::vector<std::string> rules, levels;
    for (const auto& r : protocol::AlertRules()) rules.push_back(r.name);
    for (protocol::Severity v : protocol::AllSeverities()) levels.push_back(protocol::Name(v));
    levels.push_back("off");
    p_.positions[f.path] = r_.Pos(f.mark());
    r_.ForEachKnownKey(f, rules, [&](const Field& a) {
      // YAML reads a bare off as a string here (yaml-cpp keeps scalars as text).
      std::string level;
      Choice(a, levels, level, "off stops reporting the rule; the sandbox still refuses");
      auto rule = protocol::ParseAlertRule(a.key.Scalar());
      // Choice allowed only the levels above: a level that is no severity is "off" (nullopt).
      if (!level.empty() && rule) p_.alert_severity[*rule] = protocol::ParseSeverity(level);
    });
  }

  void Bad(const Field& f, const std::string& message, const std::string& hint) {
    r_.Report(f.mark(), f.path + ": " + message, hint);
  }

  YamlReader& r_;
  Policy& p_;
  std::vector<std::string> explicit_languages_;
};

// Counts the documents of a YAML stream, at most `cap`, without building nodes. YAML::LoadAll is
// not used: yaml-cpp 0.7 never returns from it on a stray ',' at document level (each round yields
// an empty document without consuming the token, and memory grows without bound; found by
// fuzz/policy_parser, input kept in fuzz/regressions/policy_parser/).
class DocumentCounter : public YAML::EventHandler {
 public:
  int documents = 0;
  YAML::Mark second;  // the first node of the second document (its "---" line if it has none)
  void OnDocumentStart(const YAML::Mark& m) override {
    if (++documents == 2) second = m;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { Node(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { Node(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override { Node(m); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Node(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Node(m);
  }
  void OnMapEnd() override {}

 private:
  void Node(const YAML::Mark& m) {
    if (documents == 2 && !second_node_) {
      second = m;
      second_node_ = true;
    }
  }
  bool second_node_ = false;
};

DocumentCounter CountDocuments(const std::string& text, int cap) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentCounter counter;
  for (int n = 0; n < cap && parser.HandleNextDocument(counter); ++n) {
  }
  return counter;
}

}  // namespace

PolicyParse ParsePolicyDetailed(std::string_view yaml_text, const std::string& file_name) {
  PolicyParse out;
  YamlReader reader(file_name, yaml_text);
  YAML::Node root;
  // Over a size, depth or node limit: refused before yaml-cpp builds (or recurses into) anything.
  // A syntax error is left to YAML::Load below, which reports it in the words users know.
  if (auto refused = CheckYamlBounds(yaml_text); refused && refused->kind != YamlErrorKind::kSyntax) {
    reader.Report(refused->mark, "the policy is refused: " + refused->message,
                  "a policy is a few levels of plain mappings and lists; check for runaway [ or { or a "
                  "generated file");
    out.diagnostics = reader.diagnostics();
    return out;
  }
  try {
    const std::string text(yaml_text);
    root = YAML::Load(text);
    // YAML::Load alone would silently drop everything after the first "---".
    DocumentCounter docs = CountDocuments(text, 3);
    if (docs.documents > 1) {
      reader.Report(docs.second, "the file holds " + std::string(docs.documents > 2 ? "3 or more" : "2") +
                                     " YAML documents (or a stray ',' outside [ ] or { })",
                    "keep one policy per file (remove the second '---' and what follows)");
      out.diagnostics = reader.diagnostics();
      return out;
    }
  } catch (const YAML::ParserException& e) {
    reader.Report(e.mark, "YAML syntax error: " + e.msg,
                  "check the indentation (spaces, not tabs) and quoting near here; a mapping is 'key: value' "
                  "with a space after the colon");
    out.diagnostics = reader.diagnostics();
    return out;
  } catch (const YAML::Exception& e) {
    reader.Report(e.mark, "YAML error: " + e.msg, "check the file is valid YAML");
    out.diagnostics = reader.diagnostics();
    return out;
  }

  Policy policy;
  policy.source_file = file_name;
  {
    size_t slash = file_name.rfind('/');
    policy.build.policy_dir = slash == std::string::npos ? "." : slash == 0 ? "/" : file_name.substr(0, slash);
  }
  policy.cpu = kDefaultCpu;
  policy.memory_bytes = kDefaultMemory;
  policy.image = "host";
  policy.languages = BuiltinLanguages();
  Parser parser(reader, policy);
  parser.Document(root);
  if (!reader.diagnostics().empty()) {
    out.diagnostics = reader.diagnostics();
    SortByPosition(out.diagnostics);
    return out;
  }
  ExpandCommandPresets(policy);
  ApplyBuiltinDescription(policy);
  // Left out: commands.allow is the default language's interpreter, so a minimal policy runs.
  if (!policy.positions.count("commands.allow")) {
    if (const Language* lang = policy.FindLanguage(policy.default_language); lang && !lang->command.empty()) {
      policy.allow.push_back(lang->command[0]);
    }
  }
  out.diagnostics = CheckPolicyConsistency(policy, parser.explicit_languages());
  SortByPosition(out.diagnostics);
  if (out.diagnostics.empty()) out.policy = std::move(policy);
  return out;
}

Result<Policy> ParsePolicyText(std::string_view yaml_text, const std::string& file_name) {
  PolicyParse parsed = ParsePolicyDetailed(yaml_text, file_name);
  if (!parsed.policy) return Error{FormatDiagnostics(parsed.diagnostics)};
  return std::move(*parsed.policy);
}

}  // namespace lsb
