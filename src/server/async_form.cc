#include "server/async_form.h"

#include "server/routes.h"

namespace lsb::server {

ApiOr<bool> TakeAsyncFlag(nlohmann::json& body, const HttpRequest& req) {
  bool wanted = false;
  if (auto it = body.find("async"); it != body.end()) {
    if (!it->is_boolean()) return BadRequest("async: must be true or false");
    wanted = it->get<bool>();
    body.erase(it);
  }
  std::string q = req.Query("async");
  if (q == "true" || q == "1") wanted = true;
  if (req.Header("prefer").find("respond-async") != std::string::npos) wanted = true;
  return wanted;
}

ApiError AsyncStoreFull(const ExecutionStore& store) {
  return {ApiCode::kTooManyRequests,
          "async: " + std::to_string(store.limits().max_entries) +
              " asynchronous executions are pending, the most kept (serve --async-keep); "
              "retry after the Retry-After seconds",
          1};
}

HttpResponse AsyncAccepted(const std::string& id) {
  std::string location = "/v1/executions/" + id;
  HttpResponse res = JsonResponse(202, {{"execution_id", id},
                                        {"state", ExecutionStateName(ExecutionState::kQueued)},
                                        {"location", location}});
  res.headers.emplace_back("Location", location);
  res.headers.emplace_back("X-Execution-Id", id);
  res.headers.emplace_back("Preference-Applied", "respond-async");
  return res;
}

}  // namespace lsb::server
