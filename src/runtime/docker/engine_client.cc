#include "runtime/docker/engine_client.h"

#include <sys/socket.h>

#include <cstdio>

#include "runtime/docker/connection.h"

namespace lsb::docker {
namespace {

// Reads from `fd` into `parser` until it says done (or headers done, for a hijack).
Status ReadResponse(int fd, ResponseParser* parser, bool until_headers, const std::string& what,
                    std::chrono::milliseconds timeout) {
  char buf[16384];
  while (!(until_headers ? parser->headers_done() : parser->done())) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        return Error{"the Docker engine did not answer " + what + " within " + std::to_string(timeout.count()) +
                         " ms",
                     ETIMEDOUT};
      return Error::FromErrno("read answer to " + what);
    }
    if (n == 0) {
      auto st = parser->FeedEof();
      if (!st.ok()) return st.error().Wrap(what);
      break;
    }
    auto st = parser->Feed(std::string_view(buf, static_cast<size_t>(n)));
    if (!st.ok()) return st.error().Wrap(what);
  }
  return OkStatus();
}

std::string EngineMessage(const HttpResponse& resp) {
  ParsedJson j = ParseEngineJson(resp.body);
  if (j.ok() && j->is_object() && j->contains("message") && (*j)["message"].is_string())
    return (*j)["message"].get<std::string>();
  std::string body = resp.body.substr(0, 300);
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.pop_back();
  return body.empty() ? resp.reason : body;
}

}  // namespace

ParsedJson ParseEngineJson(std::string_view text) {
  return ParseBoundedJson(text, {kMaxBodyBytes, kJsonMaxDepth, 1u << 22});
}

int CompareApiVersions(const std::string& a, const std::string& b) {
  int amaj = 0, amin = 0, bmaj = 0, bmin = 0;
  std::sscanf(a.c_str(), "%d.%d", &amaj, &amin);
  std::sscanf(b.c_str(), "%d.%d", &bmaj, &bmin);
  if (amaj != bmaj) return amaj < bmaj ? -1 : 1;
  if (amin != bmin) return amin < bmin ? -1 : 1;
  return 0;
}

Result<EngineClient> EngineClient::Open(const Endpoint& ep, ClientOptions opts) {
  EngineClient c(ep, opts);
  HttpRequest req;
  req.target = "/version";  // unversioned: answers whatever version the engine speaks
  LSB_ASSIGN_OR_RETURN(auto resp, c.RawCall(req, opts.call_timeout));
  if (resp.status != 200)
    return Error{"Docker engine at " + ep.ToString() + ": GET /version: " + std::to_string(resp.status) + ": " +
                 EngineMessage(resp)};
  ParsedJson parsed = ParseEngineJson(resp.body);
  if (!parsed.ok())
    return Error{"Docker engine at " + ep.ToString() + ": GET /version: " + parsed.error().message};
  Json j = std::move(parsed).value();
  if (!j.is_object() || !j.contains("ApiVersion") || !j["ApiVersion"].is_string())
    return Error{"Docker engine at " + ep.ToString() + ": GET /version did not name an ApiVersion"};
  std::string engine = j["ApiVersion"].get<std::string>();
  if (CompareApiVersions(engine, kMinApiVersion) < 0)
    return Error{"Docker engine at " + ep.ToString() + " speaks API " + engine + "; llm-sandbox needs " +
                 kMinApiVersion + " or newer (Docker 19.03+, Podman 3+)"};
  c.api_version_ = CompareApiVersions(engine, kMaxApiVersion) < 0 ? engine : kMaxApiVersion;
  if (j.contains("Components") && j["Components"].is_array())
    for (const auto& comp : j["Components"])
      if (JsonStringOr(comp, "Name", "").find("Podman") != std::string::npos) c.is_podman_ = true;
  return c;
}

Result<HttpResponse> EngineClient::RawCall(const HttpRequest& req, std::chrono::milliseconds timeout) const {
  std::string what = req.method + " " + req.target;
  LSB_ASSIGN_OR_RETURN(UniqueFd fd, Connect(ep_, opts_.connect_timeout));
  LSB_TRY(SetIoTimeout(fd.get(), timeout));
  HttpRequest r = req;
  r.headers.emplace_back("Connection", "close");
  bool typed = false;
  for (const auto& [k, v] : r.headers) typed = typed || k == "Content-Type";
  if (!r.body.empty() && !typed) r.headers.emplace_back("Content-Type", "application/json");
  auto st = SendAll(fd.get(), EncodeRequest(r));
  if (!st.ok()) return st.error().Wrap("Docker engine at " + ep_.ToString() + ": send " + what);
  ResponseParser parser(req.method == "HEAD");
  auto rd = ReadResponse(fd.get(), &parser, false, what, timeout);
  if (!rd.ok()) return rd.error().Wrap("Docker engine at " + ep_.ToString());
  return parser.TakeResponse();
}

Result<HttpResponse> EngineClient::Call(const std::string& method, const std::string& path, const std::string& body,
                                        std::chrono::milliseconds timeout) const {
  HttpRequest req;
  req.method = method;
  req.target = "/v" + api_version_ + path;
  req.body = body;
  return RawCall(req, timeout.count() > 0 ? timeout : opts_.call_timeout);
}

Result<Json> EngineClient::CallJson(const std::string& method, const std::string& path, const Json& body,
                                    std::chrono::milliseconds timeout) const {
  LSB_ASSIGN_OR_RETURN(auto resp, Call(method, path, body.is_null() ? std::string() : body.dump(), timeout));
  if (resp.status / 100 != 2) {
    return Error{"Docker engine: " + method + " " + path.substr(0, path.find('?')) + ": " +
                 std::to_string(resp.status) + ": " + EngineMessage(resp)};
  }
  if (resp.body.empty()) return Json(nullptr);
  ParsedJson j = ParseEngineJson(resp.body);
  if (!j.ok()) return Error{"Docker engine: " + method + " " + path + ": answer refused: " + j.error().message};
  return std::move(j).value();
}

Result<Hijacked> EngineClient::Hijack(const std::string& path) const {
  std::string what = "POST " + path.substr(0, path.find('?'));
  LSB_ASSIGN_OR_RETURN(UniqueFd fd, Connect(ep_, opts_.connect_timeout));
  LSB_TRY(SetIoTimeout(fd.get(), opts_.call_timeout));
  HttpRequest req;
  req.method = "POST";
  req.target = "/v" + api_version_ + path;
  req.headers = {{"Connection", "Upgrade"}, {"Upgrade", "tcp"}};
  auto st = SendAll(fd.get(), EncodeRequest(req));
  if (!st.ok()) return st.error().Wrap("Docker engine: send " + what);
  ResponseParser parser;
  parser.StopAfterHeaders();
  auto rd = ReadResponse(fd.get(), &parser, true, what, opts_.call_timeout);
  if (!rd.ok()) return rd.error().Wrap("Docker engine at " + ep_.ToString());
  int status = parser.response().status;
  if (status != 101 && status != 200) {
    // An error answer has a normal body: read the rest of it for the engine's message (Podman,
    // for one, starts the container's runtime at attach and says here why that failed).
    std::string message = parser.response().reason;
    parser.ResumeAfterHeaders();
    if (parser.Feed("").ok() && ReadResponse(fd.get(), &parser, false, what, opts_.call_timeout).ok())
      message = EngineMessage(parser.response());
    return Error{"Docker engine at " + ep_.ToString() + ": " + what + ": " + std::to_string(status) + ": " + message};
  }
  LSB_TRY(SetIoTimeout(fd.get(), std::chrono::milliseconds(0)));  // the stream lives as long as the box
  return Hijacked{std::move(fd), parser.TakeRest()};
}

Result<Json> EngineClient::Info() const { return CallJson("GET", "/info"); }

Result<bool> EngineClient::ImageExists(const std::string& image) const {
  LSB_ASSIGN_OR_RETURN(auto resp, Call("GET", "/images/" + image + "/json"));
  if (resp.status == 200) return true;
  if (resp.status == 404) return false;
  return Error{"Docker engine: inspect image " + image + ": " + std::to_string(resp.status) + ": " +
               EngineMessage(resp)};
}

Result<std::string> EngineClient::CreateContainer(const Json& spec, const std::string& name) const {
  std::string path = "/containers/create";
  if (!name.empty()) path += "?name=" + UrlEncode(name);
  LSB_ASSIGN_OR_RETURN(auto j, CallJson("POST", path, spec));
  if (!j.is_object() || !j.contains("Id") || !j["Id"].is_string())
    return Error{"Docker engine: create container: answer has no Id"};
  return j["Id"].get<std::string>();
}

Status EngineClient::StartContainer(const std::string& id) const {
  LSB_ASSIGN_OR_RETURN(auto resp, Call("POST", "/containers/" + id + "/start", ""));
  if (resp.status == 204 || resp.status == 304) return OkStatus();
  return Error{"Docker engine: start container " + id.substr(0, 12) + ": " + std::to_string(resp.status) + ": " +
               EngineMessage(resp)};
}

Status EngineClient::KillContainer(const std::string& id, const std::string& signal) const {
  LSB_ASSIGN_OR_RETURN(auto resp, Call("POST", "/containers/" + id + "/kill?signal=" + UrlEncode(signal), ""));
  // 404: gone already; 409: not running. Both mean "dead", which is what the caller wants.
  if (resp.status == 204 || resp.status == 404 || resp.status == 409) return OkStatus();
  return Error{"Docker engine: kill container " + id.substr(0, 12) + ": " + std::to_string(resp.status) + ": " +
               EngineMessage(resp)};
}

Status EngineClient::RemoveContainer(const std::string& id, bool force) const {
  LSB_ASSIGN_OR_RETURN(auto resp,
                       Call("DELETE", "/containers/" + id + "?v=1" + (force ? "&force=1" : ""), ""));
  if (resp.status == 204 || resp.status == 404) return OkStatus();
  // A forced removal has one conflict: a removal already in progress, someone else finishing the
  // same job (a running container is killed, not a conflict).
  if (resp.status == 409 && force) return OkStatus();
  return Error{"Docker engine: remove container " + id.substr(0, 12) + ": " + std::to_string(resp.status) + ": " +
               EngineMessage(resp)};
}

Result<bool> EngineClient::WaitNotRunning(const std::string& id, std::chrono::milliseconds timeout) const {
  auto resp = Call("POST", "/containers/" + id + "/wait?condition=not-running", "", timeout);
  if (!resp.ok()) {
    // Our own deadline, not the engine's silence on the socket: the container is still running.
    if (resp.error().sys_errno == EAGAIN || resp.error().sys_errno == ETIMEDOUT) return false;
    return resp.error();
  }
  if (resp->status == 200 || resp->status == 404) return true;
  return Error{"Docker engine: wait for container " + id.substr(0, 12) + ": " + std::to_string(resp->status) + ": " +
               EngineMessage(*resp)};
}

Result<Json> EngineClient::InspectContainer(const std::string& id) const {
  return CallJson("GET", "/containers/" + id + "/json");
}

Result<Json> EngineClient::ContainerStats(const std::string& id) const {
  return CallJson("GET", "/containers/" + id + "/stats?stream=0&one-shot=1");
}

Result<Json> EngineClient::ListContainers(const std::string& label_key, const std::string& label_value) const {
  std::string label = label_value.empty() ? label_key : label_key + "=" + label_value;
  Json filters = {{"label", Json::array({label})}};
  return CallJson("GET", "/containers/json?all=1&filters=" + UrlEncode(filters.dump()));
}

Result<Json> EngineClient::EnsureNetwork(const std::string& name, const Json& create_body) const {
  const std::string inspect = "/networks/" + UrlEncode(name);
  LSB_ASSIGN_OR_RETURN(auto resp, Call("GET", inspect, ""));
  if (resp.status == 404) {
    Json body = create_body;
    body["Name"] = name;
    body["CheckDuplicate"] = true;
    LSB_ASSIGN_OR_RETURN(auto created, Call("POST", "/networks/create", body.dump()));
    if (created.status / 100 != 2 && created.status != 409)
      return Error{"Docker engine: create network " + name + ": " + std::to_string(created.status) + ": " +
                   EngineMessage(created)};
    LSB_ASSIGN_OR_RETURN(resp, Call("GET", inspect, ""));
  }
  if (resp.status != 200)
    return Error{"Docker engine: inspect network " + name + ": " + std::to_string(resp.status) + ": " +
                 EngineMessage(resp)};
  ParsedJson j = ParseEngineJson(resp.body);
  if (!j.ok() || !j->is_object())
    return Error{"Docker engine: inspect network " + name + ": answer refused: " +
                 (j.ok() ? std::string("not a JSON object") : j.error().message)};
  return std::move(j).value();
}

Result<Json> EngineClient::InspectImage(const std::string& image) const {
  LSB_ASSIGN_OR_RETURN(auto resp, Call("GET", "/images/" + image + "/json"));
  if (resp.status == 404) return Error{ErrorCode::kNotFound, "image " + image + " is not in the engine"};
  if (resp.status != 200)
    return Error{"Docker engine: inspect image " + image + ": " + std::to_string(resp.status) + ": " + EngineMessage(resp)};
  ParsedJson j = ParseEngineJson(resp.body);
  if (!j.ok() || !j->is_object()) return Error{"Docker engine: inspect image " + image + ": answer refused"};
  return std::move(j).value();
}

Status EngineClient::PutArchive(const std::string& id, const std::string& path, const std::string& tar,
                                std::chrono::milliseconds timeout) const {
  HttpRequest req;
  req.method = "PUT";
  req.target = "/v" + api_version_ + "/containers/" + id + "/archive?path=" + UrlEncode(path);
  req.headers.emplace_back("Content-Type", "application/x-tar");
  req.body = tar;
  LSB_ASSIGN_OR_RETURN(auto resp, RawCall(req, timeout));
  if (resp.status == 200) return OkStatus();
  return Error{"Docker engine: copy files into container " + id.substr(0, 12) + ": " + std::to_string(resp.status) +
               ": " + EngineMessage(resp)};
}

Result<std::string> EngineClient::Commit(const std::string& id, const std::string& repo, const std::string& tag,
                                         const Json& config, std::chrono::milliseconds timeout) const {
  LSB_ASSIGN_OR_RETURN(Json j, CallJson("POST", "/commit?container=" + UrlEncode(id) + "&repo=" + UrlEncode(repo) +
                                                    "&tag=" + UrlEncode(tag) + "&pause=0",
                                        config, timeout));
  if (!j.is_object() || !j.contains("Id") || !j["Id"].is_string()) return Error{"Docker engine: commit: answer has no Id"};
  return j["Id"].get<std::string>();
}

Result<Json> EngineClient::ListImages(const std::string& label_key, const std::string& label_value) const {
  std::string label = label_value.empty() ? label_key : label_key + "=" + label_value;
  Json filters = {{"label", Json::array({label})}};
  return CallJson("GET", "/images/json?filters=" + UrlEncode(filters.dump()));
}

Status EngineClient::RemoveImage(const std::string& image) const {
  LSB_ASSIGN_OR_RETURN(auto resp, Call("DELETE", "/images/" + image + "?noprune=0", ""));
  if (resp.status == 200 || resp.status == 404) return OkStatus();
  return Error{"Docker engine: remove image " + image + ": " + std::to_string(resp.status) + ": " + EngineMessage(resp)};
}

}  // namespace lsb::docker
