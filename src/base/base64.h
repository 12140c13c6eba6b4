// Standard base64 (RFC 4648, with padding) for bytes that JSON cannot carry as text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lsb {

std::string Base64Encode(std::string_view bytes);

}  // namespace lsb
