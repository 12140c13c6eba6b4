#include "egress/stream_mask.h"

#include <algorithm>
#include <utility>

namespace lsb::egress {

StreamMask::StreamMask(std::vector<std::string> values) : values_(std::move(values)) {
  values_.erase(std::remove_if(values_.begin(), values_.end(), [](const std::string& v) { return v.empty(); }),
                values_.end());
  for (const std::string& v : values_) max_hold_ = std::max(max_hold_, v.size() - 1);
}

std::string StreamMask::Feed(std::string_view data) {
  std::string buf = std::move(held_);
  buf.append(data);
  held_.clear();
  for (const std::string& v : values_)
    for (size_t at = buf.find(v); at != std::string::npos; at = buf.find(v, at + v.size()))
      std::fill_n(buf.begin() + static_cast<std::ptrdiff_t>(at), v.size(), '*');
  // The longest tail that is the start of some value waits for the bytes that may complete it.
  size_t hold = 0;
  for (const std::string& v : values_)
    for (size_t n = std::min(v.size() - 1, buf.size()); n > hold; --n)
      if (std::string_view(buf).substr(buf.size() - n) == std::string_view(v).substr(0, n)) {
        hold = n;
        break;
      }
  held_ = buf.substr(buf.size() - hold);
  buf.resize(buf.size() - hold);
  return buf;
}

std::string StreamMask::Flush() { return std::exchange(held_, std::string()); }

}  // namespace lsb::egress
