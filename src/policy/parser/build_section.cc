// container.build (docs/policy.md): each list bounded, each entry checked (policy/build_rules.h).
#include <sys/socket.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "policy/build_rules.h"
#include "policy/network_rules.h"
#include "policy/parser/section_context.h"
#include "policy/parser/section_keys.h"
#include "policy/units.h"

namespace lsb::policy_parser {

// One key of container.build; the lists, files, duration and sizes have their own functions below.
void SectionParser::Build(const Field& f) {
  const std::string key = f.key.Scalar();
  BuildSpec& b = p_.build;
  if (key == "pip") {
    BuildList(f, b.pip, CheckPipRequirement, "write requirement specifiers such as \"pandas==2.2.*\" or \"pytest>=8\"; "
              "the index is build.pip_index_url");
  } else if (key == "run") {
    BuildList(f, b.run, [](std::string_view c) -> Status {
      if (c.empty() || c.size() > kMaxBuildEntryBytes) return Error{"a command of 1 to 4096 bytes is expected"};
      return OkStatus();
    }, "write one shell command per entry");
  } else if (key == "apt") {
    BuildList(f, b.apt, CheckAptPackage, "write Debian package names such as \"git\" or \"curl=7.88.1-10+deb12u5\"; "
              "each is one word given to apt-get, never a shell");
  } else if (key == "apt_sources") {
    BuildList(f, b.apt_sources, [](std::string_view line) -> Status {
      auto src = ParseAptSource(line);
      return src.ok() ? OkStatus() : Status(src.error());
    }, "write one-line sources.list entries such as \"deb [trusted=yes] http://apt.example/ ./\" or "
       "\"deb http://deb.debian.org/debian bookworm main\"");
    if (b.apt_sources.size() > kMaxAptSources) {
      r_.Report(f.mark(), f.path + ": more than 32 sources", "list fewer archives");
      b.apt_sources.resize(kMaxAptSources);
    }
  } else if (key == "pip_index_url") {
    SetIfValid(f, b.pip_index_url, r_.String(f), [](const std::string& s) -> std::optional<Problem> {
      auto url = ParseIndexUrl(s);
      if (url.ok()) return std::nullopt;
      return Problem{url.error().message, "write a URL such as https://pypi.org/simple"};
    });
  } else if (key == "files") {
    BuildFiles(f);
  } else if (key == "network") {
    p_.positions[f.path] = r_.Pos(f.mark());
    r_.ForEachKnownKey(f, kBuildNetworkKeys, [&](const Field& n) {
      NetworkList(n, n.key.Scalar() == "allow" ? b.network_allow : b.network_deny);
    });
  } else if (key == "timeout") {
    BuildTimeout(f);
  } else if (key == "memory" || key == "output" || key == "disk") {
    BuildSize(f, key);
  }
}

// A list of build.pip, run, apt or apt_sources: at most kMaxBuildEntries, each entry `check`ed.
void SectionParser::BuildList(const Field& f, std::vector<std::string>& out,
                              const std::function<Status(std::string_view)>& check, const std::string& hint) {
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
}

// build.files: {target in the image: source next to the policy file}.
void SectionParser::BuildFiles(const Field& f) {
  BuildSpec& b = p_.build;
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
}

void SectionParser::BuildTimeout(const Field& f) {
  auto s = r_.String(f);
  if (!s) return;
  auto ms = units::ParseDurationMs(*s);
  if (!ms.ok() || *ms == 0 || *ms > 24ull * 3600 * 1000) {
    r_.Report(f.mark(), f.path + ": '" + *s + "' is not a duration between 1s and 24h", "write e.g. 20m or 600s");
    return;
  }
  Set(f, p_.build.timeout_ms, *ms);
}

// build.memory, build.output or build.disk (`key`).
void SectionParser::BuildSize(const Field& f, const std::string& key) {
  BuildSpec& b = p_.build;
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

// build.network left out: the hosts the steps must reach, implicitly: the pip index's (and
// files.pythonhosted.org, where pypi.org keeps its files), each build.apt_sources archive's, or
// deb.debian.org for build.apt on the image's own sources. Written: it must reach the pip index
// and every apt_sources archive, or the step could not work (the image's own sources cannot be
// known here: they are the writer's to allow).
void SectionParser::BuildNetworkDefaults(const Field& f) {
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
bool SectionParser::Reaches(const IndexUrl& url) const {
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

}  // namespace lsb::policy_parser
