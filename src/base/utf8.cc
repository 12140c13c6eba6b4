#include "base/utf8.h"

namespace lsb {

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  auto cont = [&](size_t k) { return k < n && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80; };
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    unsigned char c1 = i + 1 < n ? static_cast<unsigned char>(s[i + 1]) : 0;
    if (c >= 0xC2 && c <= 0xDF) {
      if (!cont(i + 1)) return false;
      i += 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      // E0: no overlong (second byte >= A0); ED: no surrogates (second byte < A0).
      if (!cont(i + 1) || !cont(i + 2)) return false;
      if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0)) return false;
      i += 3;
    } else if (c >= 0xF0 && c <= 0xF4) {
      // F0: no overlong (second byte >= 90); F4: nothing above U+10FFFF (second byte < 90).
      if (!cont(i + 1) || !cont(i + 2) || !cont(i + 3)) return false;
      if ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 >= 0x90)) return false;
      i += 4;
    } else {
      return false;  // a continuation byte first, C0/C1 (overlong), F5..FF
    }
  }
  return true;
}

size_t Utf8CutAt(std::string_view s, size_t limit) {
  const size_t n = limit < s.size() ? limit : s.size();
  // The last lead byte within three bytes of n: when its sequence needs more bytes than s[0, n)
  // has, cut before it.
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    unsigned char c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 1;
    return len > back && n - back > 0 ? n - back : n;
  }
  return n;
}

}  // namespace lsb
