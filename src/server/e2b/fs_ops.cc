#include "server/e2b/fs_ops.h"

#include "base/base64.h"
#include "inbox/inbox_sources.h"

namespace lsb::server::e2b {
namespace {

using nlohmann::json;

const char* OpName(FsOp op) {
  switch (op) {
    case FsOp::kList: return "list";
    case FsOp::kStat: return "stat";
    case FsOp::kMakeDir: return "mkdir";
    case FsOp::kRemove: return "remove";
  }
  return "stat";
}

RpcCode CodeOf(const std::string& name) {
  for (RpcCode c : {RpcCode::kInvalidArgument, RpcCode::kNotFound, RpcCode::kAlreadyExists, RpcCode::kPermissionDenied,
                    RpcCode::kResourceExhausted})
    if (name == RpcCodeName(c)) return c;
  return RpcCode::kInternal;
}

}  // namespace

std::string FsOpCode(FsOp op, const std::string& path, unsigned depth, const std::string& marker) {
  // src/inbox/e2b_fs_ops.py runs in a fresh globals dict (the session's own variables are neither
  // read nor changed). The arguments travel as JSON inside base64: no quoting of a hostile path can
  // reach Python.
  json args = {{"MARKER", marker}, {"OP", OpName(op)}, {"PATH", path}, {"DEPTH", depth}, {"LIMIT", kMaxListEntries}};
  return "exec(__import__('base64').b64decode('" + Base64Encode(inbox::E2bFsOpsSource()) +
         "').decode(), dict(__import__('json').loads(__import__('base64').b64decode('" + Base64Encode(args.dump()) +
         "').decode()), __builtins__=__builtins__))\n";
}

FsAnswer ParseFsAnswer(const std::string& out, const std::string& marker) {
  FsAnswer a;
  size_t at = out.rfind(marker);
  if (at == std::string::npos) {
    a.error = {RpcCode::kInternal, "the sandbox's interpreter gave no answer (it may have been restarted or its stdout replaced)"};
    return a;
  }
  size_t end = out.find('\n', at);
  json j = json::parse(out.substr(at + marker.size(), end == std::string::npos ? std::string::npos : end - at - marker.size()),
                       nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    a.error = {RpcCode::kInternal, "the sandbox's answer was not readable"};
    return a;
  }
  if (j.contains("ok")) {
    a.ok = true;
    a.message = j["ok"];
    return a;
  }
  // What the box wrote is not trusted to be well-formed: only strings are taken from it.
  json e = j.contains("error") && j["error"].is_object() ? j["error"] : json::object();
  std::string code = e.contains("code") && e["code"].is_string() ? e["code"].get<std::string>() : "";
  std::string message = e.contains("message") && e["message"].is_string() ? e["message"].get<std::string>()
                                                                          : "the operation failed";
  a.error = {CodeOf(code), message};
  return a;
}

}  // namespace lsb::server::e2b
