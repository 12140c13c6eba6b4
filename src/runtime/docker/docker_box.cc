#include "runtime/docker/docker_box.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "base/io.h"

namespace lsb::docker {
namespace {

// Where cgroupfs (v1) and systemd/v2 drivers put a container's cgroup directories: Docker's, then
// Podman's (libpod_parent with cgroupfs, machine.slice with systemd).
std::vector<std::string> CgroupDirs(const std::string& controller, const std::string& id) {
  return {"/sys/fs/cgroup/" + controller + "/docker/" + id,
          "/sys/fs/cgroup/" + controller + "/system.slice/docker-" + id + ".scope",
          "/sys/fs/cgroup/docker/" + id, "/sys/fs/cgroup/system.slice/docker-" + id + ".scope",
          "/sys/fs/cgroup/" + controller + "/libpod_parent/libpod-" + id,
          "/sys/fs/cgroup/" + controller + "/machine.slice/libpod-" + id + ".scope"};
}

std::optional<std::string> ReadCgroupFile(const std::string& controller, const std::string& id,
                                          const std::string& file) {
  for (const auto& dir : CgroupDirs(controller, id)) {
    auto r = ReadFile(dir + "/" + file);
    if (r.ok()) return *r;
  }
  return std::nullopt;
}

// "key value" lines (memory.oom_control, pids.events, memory.events).
std::optional<uint64_t> KeyedValue(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string k;
  uint64_t v;
  while (in >> k >> v)
    if (k == key) return v;
  return std::nullopt;
}

std::optional<uint64_t> Number(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  char* end = nullptr;
  uint64_t v = std::strtoull(text->c_str(), &end, 10);
  if (end == text->c_str()) return std::nullopt;
  return v;
}

// Cumulative cpu of the container's cgroup: cpuacct.usage (v1, ns) or cpu.stat usage_usec (v2).
std::optional<uint64_t> CgroupCpuNs(const std::string& cid) {
  if (auto ns = Number(ReadCgroupFile("cpuacct", cid, "cpuacct.usage"))) return ns;
  if (auto st = ReadCgroupFile("", cid, "cpu.stat"))
    if (auto us = KeyedValue(*st, "usage_usec")) return *us * 1000;
  return std::nullopt;
}

// The engine's stats, for engines whose cgroups we cannot read (remote, rootless, other drivers).
void FillFromStats(const EngineClient& engine, const std::string& cid, std::optional<uint64_t>& cpu_ns,
                   std::optional<uint64_t>* memory_peak, std::optional<uint64_t>* memory_now) {
  auto stats = engine.ContainerStats(cid);
  if (!stats.ok() || !stats->is_object()) return;
  const auto& mem = stats->value("memory_stats", Json::object());
  if (memory_peak && mem.contains("max_usage") && mem["max_usage"].is_number_unsigned())
    *memory_peak = mem["max_usage"].get<uint64_t>();
  if (memory_now && mem.contains("usage") && mem["usage"].is_number_unsigned())
    *memory_now = mem["usage"].get<uint64_t>();
  const auto& cpu = stats->value("cpu_stats", Json::object());
  if (!cpu_ns && cpu.contains("cpu_usage") && cpu["cpu_usage"].contains("total_usage") &&
      cpu["cpu_usage"]["total_usage"].is_number_unsigned())
    cpu_ns = cpu["cpu_usage"]["total_usage"].get<uint64_t>();
}

}  // namespace

BoxUsage ReadUsage(const EngineClient& engine, const std::string& cid) {
  BoxUsage u;
  if (engine.endpoint().kind == Endpoint::Kind::kUnix) {
    u.cpu_ns = CgroupCpuNs(cid);
    u.memory_bytes = Number(ReadCgroupFile("memory", cid, "memory.usage_in_bytes"));  // v1
    if (!u.memory_bytes) u.memory_bytes = Number(ReadCgroupFile("", cid, "memory.current"));  // v2
  }
  if (!u.cpu_ns || !u.memory_bytes) FillFromStats(engine, cid, u.cpu_ns, nullptr, &u.memory_bytes);
  return u;
}

BoxVerdict ReadVerdict(const EngineClient& engine, const std::string& cid) {
  BoxVerdict v;
  bool local = engine.endpoint().kind == Endpoint::Kind::kUnix;
  bool oom_counted = false;  // the cgroup's own OOM kill counter was read
  if (local) {
    if (auto oc = ReadCgroupFile("memory", cid, "memory.oom_control")) {  // v1
      if (auto n = KeyedValue(*oc, "oom_kill")) v.oom_kill_count = *n, oom_counted = true;
    } else if (auto ev = ReadCgroupFile("", cid, "memory.events")) {  // v2
      if (auto n = KeyedValue(*ev, "oom_kill")) v.oom_kill_count = *n, oom_counted = true;
    }
    auto peak = Number(ReadCgroupFile("memory", cid, "memory.max_usage_in_bytes"));
    if (!peak) peak = Number(ReadCgroupFile("", cid, "memory.peak"));
    v.memory_peak_bytes = peak;
    if (auto pe = ReadCgroupFile("pids", cid, "pids.events")) {
      if (auto n = KeyedValue(*pe, "max")) v.pids_limit_events = *n;
    }
    v.cpu_ns = CgroupCpuNs(cid);
  }
  // The engine's view: OOMKilled survives the container's death; stats only while it runs. Asked
  // only when the cgroup's counter was not there to read: a verdict is taken before and after
  // every execution, and an engine round trip each time sat on the warm pool's hot path.
  if (!oom_counted) {
    auto insp = engine.InspectContainer(cid);
    if (insp.ok() && insp->contains("State")) {
      const auto& st = (*insp)["State"];
      if (st.value("OOMKilled", false) && v.oom_kill_count == 0) v.oom_kill_count = 1;
      // Once the container has ended (its cgroup, hence the counter, is gone): how init ended.
      std::string status = st.value("Status", "");
      if ((status == "exited" || status == "dead") && st.contains("ExitCode") && st["ExitCode"].is_number_integer())
        v.init_exit_code = st["ExitCode"].get<int>();
    } else if (!insp.ok() && insp.error().sys_errno != 0) {
      v.backend_error = insp.error().message;  // a transport failure: the engine is not answering
    }
  }
  if (!local || !v.memory_peak_bytes) FillFromStats(engine, cid, v.cpu_ns, &v.memory_peak_bytes, nullptr);
  return v;
}

Result<std::unique_ptr<DockerBox>> DockerBox::Launch(std::shared_ptr<const EngineClient> engine,
                                                     const nlohmann::json& spec,
                                                     std::shared_ptr<ContainerReaper> reaper) {
  LSB_ASSIGN_OR_RETURN(std::string cid, engine->CreateContainer(spec));
  // From here the object owns the container: an early return removes it.
  std::unique_ptr<DockerBox> box(new DockerBox(engine, cid));
  box->reaper_ = std::move(reaper);
  auto hj = engine->Hijack("/containers/" + cid + "/attach?stream=1&stdin=1&stdout=1&stderr=1");
  if (!hj.ok()) return hj.error().Wrap("attach to container " + cid.substr(0, 12));
  LSB_ASSIGN_OR_RETURN(box->pump_, StreamPump::Start(std::move(hj->fd), std::move(hj->initial), box->id()));
  auto st = engine->StartContainer(cid);
  if (!st.ok()) return st.error();
  return box;
}

DockerBox::~DockerBox() {
  proxy_.reset();  // its connections end, its threads are joined; the box's socket closes with it
  // With a reaper: closing our attach connection (the pump) makes the engine close init's stdin
  // (StdinOnce), so init kills what is left and exits; the reaper waits for that stop and removes
  // the container in the background. Without one: remove with force kills init and everything in
  // the box; the pump then sees EOF.
  if (reaper_) {
    pump_.reset();
    reaper_->Remove(container_id_);
    return;
  }
  auto st = engine_->RemoveContainer(container_id_, /*force=*/true);
  if (!st.ok()) std::fprintf(stderr, "llm-sandbox: %s (it will be removed as an orphan later)\n", st.error().message.c_str());
  pump_.reset();
}

std::vector<protocol::Event> DockerBox::TakeHostEvents(bool run_ended) {
  if (!proxy_) return {};
  // As on native: the program has exited and its connections close within moments; a background
  // process the run left behind may keep one open, and the result does not wait longer than this.
  return proxy_->TakeEvents(run_ended ? std::chrono::milliseconds(500) : std::chrono::milliseconds(0));
}

BoxVerdict DockerBox::Verdict() { return ReadVerdict(*engine_, container_id_); }

std::optional<BoxUsage> DockerBox::Usage() {
  BoxUsage u = ReadUsage(*engine_, container_id_);
  if (!u.cpu_ns && !u.memory_bytes) return std::nullopt;
  return u;
}

void DockerBox::Kill() {
  auto st = engine_->KillContainer(container_id_);
  if (!st.ok()) std::fprintf(stderr, "llm-sandbox: %s\n", st.error().message.c_str());
}

std::string DockerBox::Diagnostics() {
  std::string d = pump_ ? pump_->Diagnostics() : std::string();
  if (death_note_.empty() && pump_ && !pump_->alive()) {
    // Why did it end? Inspect says (exit code, OOM, an engine error such as a bad seccomp profile).
    auto insp = engine_->InspectContainer(container_id_);
    if (insp.ok() && insp->contains("State")) {
      const auto& s = (*insp)["State"];
      death_note_ = "container " + container_id_.substr(0, 12) + " " + s.value("Status", "?") + ", exit code " +
                    std::to_string(s.value("ExitCode", -1)) + (s.value("OOMKilled", false) ? ", OOM killed" : "");
      std::string err = s.value("Error", "");
      if (!err.empty()) death_note_ += ", engine error: " + err;
    } else if (!insp.ok()) {
      death_note_ = insp.error().message;
    }
  }
  if (!death_note_.empty()) d += (d.empty() || d.back() == '\n' ? "" : "\n") + death_note_ + "\n";
  return d;
}

}  // namespace lsb::docker
