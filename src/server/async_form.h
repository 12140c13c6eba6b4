// The asynchronous form shared by POST /v1/execute and POST /v1/batch (docs/api.md
// "Asynchronous executions"): how a request asks for it, and the answers it gets.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/execution_store.h"
#include "server/http_types.h"

namespace lsb::server {

// True when the request asks for the asynchronous form: "async": true in the body (taken out of
// `body`, so the rest parses as before), ?async=true, or the header Prefer: respond-async.
// 400 when "async" is there but not a boolean.
ApiOr<bool> TakeAsyncFlag(nlohmann::json& body, const HttpRequest& req);
// 429 for a store full of pending executions (serve --async-keep).
ApiError AsyncStoreFull(const ExecutionStore& store);
// 202 {"execution_id", "state": "queued", "location"} with Location, X-Execution-Id and
// Preference-Applied.
HttpResponse AsyncAccepted(const std::string& id);

}  // namespace lsb::server
