#include "server/http_target.h"

#include <cctype>

namespace lsb::server {

std::string PercentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

void SplitTarget(HttpRequest& r) {
  std::string_view t = r.target;
  size_t q = t.find('?');
  r.path = PercentDecode(t.substr(0, q), false);
  if (q == std::string_view::npos) return;
  std::string_view rest = t.substr(q + 1);
  while (!rest.empty()) {
    size_t amp = rest.find('&');
    std::string_view kv = rest.substr(0, amp);
    size_t eq = kv.find('=');
    std::string k = PercentDecode(kv.substr(0, eq), true);
    std::string v = eq == std::string_view::npos ? "" : PercentDecode(kv.substr(eq + 1), true);
    if (!k.empty()) r.query[k] = v;
    if (amp == std::string_view::npos) break;
    rest = rest.substr(amp + 1);
  }
}

}  // namespace lsb::server
