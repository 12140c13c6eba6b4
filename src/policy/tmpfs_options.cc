#include "policy/tmpfs_options.h"

#include <cstdio>

#include "policy/suggest.h"
#include "policy/units.h"

namespace lsb {
namespace {

const std::vector<std::string>& KnownNames() {
  static const std::vector<std::string> kNames = {"size", "mode", "noexec", "nosuid", "nodev"};
  return kNames;
}

// Options that would loosen a writable mount, and why each is refused.
std::string WhyRefused(std::string_view option) {
  if (option == "exec") {
    return "a program could write a binary or library to this mount and run it, bypassing commands.allow";
  }
  if (option == "suid") {
    return "a set-uid file written here could raise the privileges of whoever runs it";
  }
  if (option == "dev") {
    return "a device node created here would give direct access to a host device";
  }
  return "";
}

}  // namespace

std::string FormatTmpfsOptions(uint64_t size_bytes, uint32_t mode, bool noexec, bool nosuid, bool nodev) {
  char m[16];
  std::snprintf(m, sizeof(m), "%o", mode);
  std::string o = "rw";
  if (size_bytes) o += ",size=" + std::to_string(size_bytes);
  o += std::string(",mode=") + m;
  if (noexec) o += ",noexec";
  if (nosuid) o += ",nosuid";
  if (nodev) o += ",nodev";
  return o;
}

std::string KnownTmpfsOptions() { return "size=SIZE (e.g. size=100M), mode=OCTAL (e.g. mode=1777), noexec, nosuid, nodev"; }

std::vector<TmpfsOptionProblem> ParseTmpfsOptions(std::string_view text, TmpfsMount* mount) {
  std::vector<TmpfsOptionProblem> problems;
  mount->options = std::string(text);
  mount->size_bytes = kDefaultTmpfsSizeBytes;
  mount->mode = 01777;
  mount->noexec = mount->nosuid = mount->nodev = true;
  bool seen_size = false, seen_mode = false;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view raw = text.substr(start, comma - start);
    size_t offset = start;
    start = comma + 1;
    // Tolerate spaces after commas ("size=1M, noexec"): people write them.
    while (!raw.empty() && raw.front() == ' ') {
      raw.remove_prefix(1);
      ++offset;
    }
    while (!raw.empty() && raw.back() == ' ') raw.remove_suffix(1);
    if (raw.empty()) {
      if (!text.empty() && comma != text.size()) {
        problems.push_back({offset, "", "empty tmpfs option (two commas in a row)", "remove the extra comma"});
      }
      continue;
    }
    size_t eq = raw.find('=');
    std::string name(raw.substr(0, eq));
    std::string value = eq == std::string_view::npos ? "" : std::string(raw.substr(eq + 1));
    std::string refused = WhyRefused(name);
    if (!refused.empty()) {
      problems.push_back({offset, std::string(raw),
                          "tmpfs option '" + name + "' is refused: writable mounts are always noexec, nosuid and nodev",
                          "remove '" + name + "'; " + refused});
    } else if (name == "size") {
      auto size = units::ParseBytes(value);
      if (seen_size) {
        problems.push_back({offset, std::string(raw), "tmpfs option 'size' is given twice", "keep one size="});
      } else if (!size.ok()) {
        problems.push_back({offset, std::string(raw), "tmpfs size: " + size.error().message,
                            "write size=100M (M = MiB), size=512k or size=1G"});
      } else if (*size == 0) {
        problems.push_back({offset, std::string(raw), "tmpfs size must be more than 0",
                            "give the mount room, e.g. size=64M"});
      } else {
        mount->size_bytes = *size;
      }
      seen_size = true;
    } else if (name == "mode") {
      bool octal = !value.empty() && value.size() <= 4 &&
                   value.find_first_not_of("01234567") == std::string::npos;
      if (seen_mode) {
        problems.push_back({offset, std::string(raw), "tmpfs option 'mode' is given twice", "keep one mode="});
      } else if (!octal) {
        problems.push_back({offset, std::string(raw), "tmpfs mode '" + value + "' is not an octal mode",
                            "write mode=1777 (everyone, sticky) or mode=0700"});
      } else {
        mount->mode = static_cast<uint32_t>(std::stoul(value, nullptr, 8));
      }
      seen_mode = true;
    } else if ((name == "noexec" || name == "nosuid" || name == "nodev") && eq == std::string_view::npos) {
      // Already on; writing them is documentation.
    } else {
      std::string guess = ClosestMatch(name, KnownNames());
      problems.push_back({offset, std::string(raw), "unknown tmpfs option '" + std::string(raw) + "'",
                          (guess.empty() ? std::string() : "did you mean '" + guess + "'? ") +
                              "known options: " + KnownTmpfsOptions()});
    }
  }
  return problems;
}

}  // namespace lsb
