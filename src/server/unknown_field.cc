#include "server/unknown_field.h"

#include <nlohmann/json.hpp>

#include "policy/suggest.h"

namespace lsb::server {

ApiError UnknownField(const std::string& where, const std::string& key, const std::vector<std::string>& known) {
  std::string guess = ClosestMatch(key, known);
  ApiError e = BadRequest(where + key + ": unknown field; " +
                          (guess.empty() ? std::string() : "did you mean '" + guess + "'? ") +
                          "known fields: " + JoinList(known));
  e.detail = {{"field", where + key}, {"known_fields", known}};
  if (!guess.empty()) e.detail["did_you_mean"] = guess;
  return e;
}

}  // namespace lsb::server
