// container.tmpfs and container.mounts: what the box may write, and the host directories it sees.
#include <string>

#include "policy/parser/section_context.h"
#include "policy/parser/section_keys.h"
#include "policy/tmpfs_options.h"
#include "policy/units.h"
#include "protocol/messages.h"

namespace lsb::policy_parser {

void SectionParser::Tmpfs(const Field& f) {
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
void SectionParser::Mounts(const Field& f) {
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
    r_.ForEachKnownKey(item, kMountKeys, [&](const Field& k) {
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

}  // namespace lsb::policy_parser
