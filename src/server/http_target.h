// The request target of an HTTP request -> path and query (percent-decoded). Pure, so the
// daemon's request handling can be fuzzed without a socket (fuzz/http_request_fuzz.cc).
#pragma once

#include <string>
#include <string_view>

#include "server/http_types.h"

namespace lsb::server {

// "%41" -> "A"; a '%' not followed by two hex digits stays as it is; '+' is a space when asked.
std::string PercentDecode(std::string_view s, bool plus_is_space);

// Fills r.path and r.query from r.target ("/v1/x?a=1&b"): later keys win, empty keys are dropped.
void SplitTarget(HttpRequest& r);

}  // namespace lsb::server
