// The checks of container.build's entries (docs/policy.md "container.build"), pure: text in,
// verdicts out. The loader reports them with the field's position; the builder (src/build/)
// relies on them (a requirement never starts with '-', a files source never leaves the policy dir).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace lsb {

inline constexpr size_t kMaxBuildEntries = 256;       // per list (pip, run, files)
inline constexpr size_t kMaxBuildEntryBytes = 4096;   // one requirement, command or path

// A pip requirement ("pandas==2.2.*", "pytest>=8", "pkg[extra]; python_version>'3.9'"): an error
// naming what is wrong for an option ("-r file", "--index-url ..."), a control character, or
// text that does not start with a letter or digit.
Status CheckPipRequirement(std::string_view req);

struct IndexUrl {
  std::string scheme;  // "http" | "https"
  std::string host;    // a name (normalized) or an address literal, without brackets
  uint16_t port = 0;   // 0: the scheme's
};
// build.pip_index_url: http(s)://HOST[:PORT][/PATH], no user info, query or fragment.
Result<IndexUrl> ParseIndexUrl(std::string_view url);

// A build.apt entry: a Debian package name ([a-z0-9][a-z0-9+.-]+), then optionally ":ARCH"
// ([a-z0-9-]+) and "=VERSION" (Debian's version characters [A-Za-z0-9.+~:-]). It is passed to
// apt-get as one argv word, never through a shell; anything else is an error naming the entry.
Status CheckAptPackage(std::string_view entry);

inline constexpr size_t kMaxAptSources = 32;
inline constexpr size_t kMaxAptSourceBytes = 1024;
struct AptSource {
  IndexUrl url;     // the archive's URI (http or https)
  std::string uri;  // as written
};
// A build.apt_sources line, one-line sources.list format: "deb [OPTIONS] URI SUITE [COMPONENT...]",
// e.g. "deb [trusted=yes] http://apt.test/ ./". No control character, at most 1024 bytes; options,
// suite and components of [A-Za-z0-9._/=,+~-] only (the line is written to a file, never a shell).
Result<AptSource> ParseAptSource(std::string_view line);

// A files source: relative, no '..' or '.' component, no empty component (the builder opens it
// below the policy's directory without following symlinks).
Status CheckBuildSource(std::string_view source);
// A files target: absolute, no '..' or '.' component; a trailing '/' is allowed (a directory).
Status CheckBuildTarget(std::string_view target);

}  // namespace lsb
