#include "base/mountinfo.h"

#include <cstdlib>

#include <algorithm>

namespace lsb {
namespace {

std::vector<std::string_view> SplitView(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string_view::npos ? std::string_view::npos : p - start));
    if (p == std::string_view::npos) return out;
    start = p + 1;
  }
}

std::vector<std::string> SplitList(std::string_view s) {
  std::vector<std::string> out;
  for (auto v : SplitView(s, ',')) out.emplace_back(v);
  return out;
}

}  // namespace

std::string UnescapeMountinfo(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
        s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
      out.push_back(static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::vector<MountinfoEntry> ParseMountinfo(std::string_view text) {
  std::vector<MountinfoEntry> out;
  for (std::string_view line : SplitView(text, '\n')) {
    std::vector<std::string_view> f;
    for (auto w : SplitView(line, ' '))
      if (!w.empty()) f.push_back(w);
    // The optional fields end at "-"; the first six fields are always there.
    auto dash = f.size() > 6 ? std::find(f.begin() + 6, f.end(), "-") : f.end();
    if (dash == f.end() || dash + 1 == f.end()) continue;
    MountinfoEntry m;
    m.id = std::strtol(std::string(f[0]).c_str(), nullptr, 10);
    m.parent = std::strtol(std::string(f[1]).c_str(), nullptr, 10);
    m.root = UnescapeMountinfo(f[3]);
    m.mount_point = UnescapeMountinfo(f[4]);
    m.mount_options = SplitList(f[5]);
    m.fstype = std::string(dash[1]);
    if (dash + 3 < f.end()) m.super_options = SplitList(dash[3]);
    out.push_back(std::move(m));
  }
  return out;
}

bool MountHasOption(const std::vector<MountinfoEntry>& mounts, std::string_view path, std::string_view option) {
  for (auto m = mounts.rbegin(); m != mounts.rend(); ++m)
    if (m->mount_point == path)
      return std::find(m->mount_options.begin(), m->mount_options.end(), option) != m->mount_options.end();
  return false;
}

}  // namespace lsb
