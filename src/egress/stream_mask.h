// Masks secret values in a byte stream (docs/network.md "Secrets"): an upstream that echoes the
// header it was sent (an echo service, an error page quoting the request) must not hand the value
// to the program. Every occurrence, also one split across reads, becomes '*'s of the same length
// (so a Content-Length stays right). Only a verbatim copy is caught: an upstream that encodes or
// compresses what it echoes is outside what a proxy can see (docs/network.md says so).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lsb::egress {

class StreamMask {
 public:
  explicit StreamMask(std::vector<std::string> values);
  // The next bytes of the stream -> the bytes that may go on now, masked. A tail that could begin
  // a value is held back (at most max_hold() bytes) until the next call or Flush.
  std::string Feed(std::string_view data);
  // The stream ended: what was held back (it cannot be a whole value).
  std::string Flush();
  size_t max_hold() const { return max_hold_; }

 private:
  std::vector<std::string> values_;
  std::string held_;
  size_t max_hold_ = 0;
};

}  // namespace lsb::egress
