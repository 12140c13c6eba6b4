// The API's answer to a body field it does not know: the same did-you-mean as the policy loader's
// unknown key (policy/suggest.h), so a typo over HTTP is as easy to fix as one in a file.
#pragma once

#include <string>
#include <vector>

#include "server/api_error.h"

namespace lsb::server {

// 400 "WHEREKEY: unknown field; did you mean 'memory'? known fields: a, b, ..." with the detail
// {"field": WHEREKEY, "did_you_mean": "memory" (when one is close), "known_fields": [...]}.
ApiError UnknownField(const std::string& where, const std::string& key, const std::vector<std::string>& known);

}  // namespace lsb::server
