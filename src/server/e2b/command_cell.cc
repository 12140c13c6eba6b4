#include "server/e2b/command_cell.h"

#include <nlohmann/json.hpp>

#include "base/base64.h"
#include "inbox/inbox_sources.h"

namespace lsb::server::e2b {
std::string CommandCellSource(const CommandCell& c) {
  nlohmann::json a = {{"argv", c.argv}, {"env", c.env}, {"cwd", c.cwd}, {"timeout_ms", c.timeout_ms},
                      {"cap", c.output_cap}};
  // src/inbox/e2b_command_cell.py: ARGS (base64 of JSON) is put in here; `_lsb_cmd` is removed again.
  std::string src(inbox::E2bCommandCellSource());
  src.replace(src.find("ARGS"), 4, Base64Encode(a.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  return src;
}

std::string EnvCellSource(const nlohmann::json& env, bool report) {
  nlohmann::json a = {{"env", env}, {"report", report}};
  std::string src(inbox::E2bEnvSource());
  src.replace(src.find("ARGS"), 4, Base64Encode(a.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  return src;
}

}  // namespace lsb::server::e2b
