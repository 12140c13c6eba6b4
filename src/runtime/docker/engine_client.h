// A Docker Engine API client: one short connection per call (unix socket or tcp), the API version
// negotiated once through GET /version, every call bounded in time. Immutable after Open(), so one
// client is shared by all threads. Works with any engine that speaks the Docker API (Podman too).
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/bounded_json.h"
#include "base/result.h"
#include "base/unique_fd.h"
#include "runtime/docker/endpoint.h"
#include "runtime/docker/http_codec.h"

namespace lsb::docker {

using Json = nlohmann::json;

// The engine's answers are parsed within these limits (base/bounded_json.h): a body's bytes
// (http_codec.h kMaxBodyBytes), kJsonMaxDepth levels (its answers nest about six), and 4M
// elements (a long container or image list).
ParsedJson ParseEngineJson(std::string_view text);

struct ClientOptions {
  std::chrono::milliseconds connect_timeout{3000};
  std::chrono::milliseconds call_timeout{30000};  // creating or removing a container can take seconds
};

// A hijacked connection (attach): raw bidirectional bytes, plus what arrived with the headers.
struct Hijacked {
  UniqueFd fd;
  std::string initial;
};

class EngineClient {
 public:
  // The newest API version this client was written and tested against, and the oldest it accepts.
  static constexpr const char* kMaxApiVersion = "1.43";
  static constexpr const char* kMinApiVersion = "1.40";

  // Connects, asks GET /version, and settles on min(engine's version, kMaxApiVersion).
  static Result<EngineClient> Open(const Endpoint& ep, ClientOptions opts = {});

  const Endpoint& endpoint() const { return ep_; }
  // Podman's Docker-compatible service (GET /version names a "Podman Engine" component).
  bool is_podman() const { return is_podman_; }

  // One request on the versioned API ("/containers/json" -> "/v1.41/containers/json").
  Result<HttpResponse> Call(const std::string& method, const std::string& path, const std::string& body = "",
                            std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) const;
  // Call + "2xx or an Error carrying the engine's message" + the body parsed as JSON (null if empty).
  Result<Json> CallJson(const std::string& method, const std::string& path, const Json& body = nullptr,
                        std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) const;
  // POST path with Upgrade: tcp; on success the connection is a raw stream (no I/O timeout left on it).
  Result<Hijacked> Hijack(const std::string& path) const;

  // Typed helpers over the calls the backend uses.
  Result<Json> Info() const;
  Result<bool> ImageExists(const std::string& image) const;
  Result<std::string> CreateContainer(const Json& spec, const std::string& name = "") const;
  Status StartContainer(const std::string& id) const;
  Status KillContainer(const std::string& id, const std::string& signal = "KILL") const;
  // force: kill first when running. Removing a container that is already gone is success.
  Status RemoveContainer(const std::string& id, bool force = true) const;
  Result<Json> InspectContainer(const std::string& id) const;
  // Waits (at most `timeout`) until the container is not running. True: it stopped (or is gone);
  // false: still running when the time was up. An Error: the engine did not answer or refused.
  Result<bool> WaitNotRunning(const std::string& id, std::chrono::milliseconds timeout) const;
  // One stats sample, without the engine's 1 s wait for a second one.
  Result<Json> ContainerStats(const std::string& id) const;
  // Containers (running or not) carrying label `key=value` (or just `key` when value is empty).
  Result<Json> ListContainers(const std::string& label_key, const std::string& label_value = "") const;
  // The network `name` (its inspect JSON), created from `create_body` when missing. Losing a create
  // race to another process is success: the winner's network is inspected.
  Result<Json> EnsureNetwork(const std::string& name, const Json& create_body) const;

  // Images (container.build, docker_builder.h). Inspect: an Error of kind kNotFound when absent.
  Result<Json> InspectImage(const std::string& image) const;
  // A tar extracted into the (created, not yet started) container at `path`.
  Status PutArchive(const std::string& id, const std::string& path, const std::string& tar,
                    std::chrono::milliseconds timeout) const;
  // The container's filesystem as image repo:tag with `config` (merged by the engine with the
  // container's own); its image id.
  Result<std::string> Commit(const std::string& id, const std::string& repo, const std::string& tag,
                             const Json& config, std::chrono::milliseconds timeout) const;
  // Images carrying label `key=value` (or just `key`).
  Result<Json> ListImages(const std::string& label_key, const std::string& label_value = "") const;
  // Removing an image that is already gone is success.
  Status RemoveImage(const std::string& image) const;

 private:
  EngineClient(Endpoint ep, ClientOptions opts) : ep_(std::move(ep)), opts_(opts) {}
  Result<HttpResponse> RawCall(const HttpRequest& req, std::chrono::milliseconds timeout) const;

  Endpoint ep_;
  ClientOptions opts_;
  std::string api_version_;
  bool is_podman_ = false;
};

// "1.41" < "1.43"
int CompareApiVersions(const std::string& a, const std::string& b);

}  // namespace lsb::docker
