#include "runtime/docker/egress_attach.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "protocol/messages.h"

namespace lsb::docker {
namespace {

// Runs in the thread that joined the box's namespace: every interface but "lo" is a way out.
Status CheckOnlyLoopback() {
  struct if_nameindex* list = ::if_nameindex();
  if (!list) return Error::FromErrno("list the box's network interfaces");
  std::string others;
  for (auto* i = list; i->if_index != 0 && i->if_name; ++i)
    if (std::strcmp(i->if_name, "lo") != 0) others += std::string(others.empty() ? "" : ", ") + i->if_name;
  ::if_freenameindex(list);
  if (!others.empty())
    return Error{"the box's network namespace has interfaces besides loopback (" + others +
                 "): the container must run with network mode none for the egress proxy"};
  return OkStatus();
}

Status LoopbackUp() {
  UniqueFd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s) return Error::FromErrno("socket in the box's network namespace");
  struct ifreq req {};
  std::memcpy(req.ifr_name, "lo", 3);
  if (::ioctl(s.get(), SIOCGIFFLAGS, &req) != 0) return Error::FromErrno("read the box's loopback flags");
  if (req.ifr_flags & IFF_UP) return OkStatus();
  req.ifr_flags |= IFF_UP;
  if (::ioctl(s.get(), SIOCSIFFLAGS, &req) != 0) return Error::FromErrno("bring the box's loopback up");
  return OkStatus();
}

Result<UniqueFd> Listen() {
  UniqueFd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s) return Error::FromErrno("socket in the box's network namespace");
  struct sockaddr_in a {};
  a.sin_family = AF_INET;
  a.sin_port = htons(protocol::kEgressProxyPort);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    return Error::FromErrno(std::string("bind ") + protocol::kEgressProxyAddress + " in the box's network namespace");
  if (::listen(s.get(), 128) != 0) return Error::FromErrno("listen in the box's network namespace");
  return s;
}

// The socket made by a thread of its own that joins `netns` and ends: no other thread of this
// process ever changes namespace.
Result<UniqueFd> ListenIn(int netns) {
  Result<UniqueFd> out = Error{"the thread that joins the box's network namespace did not run"};
  std::thread t([&] {
    if (::setns(netns, CLONE_NEWNET) != 0) {
      out = Error::FromErrno("join the box's network namespace (setns; needs root on the engine's host)");
      return;
    }
    if (auto st = CheckOnlyLoopback(); !st.ok()) {
      out = st.error();
      return;
    }
    if (auto st = LoopbackUp(); !st.ok()) {
      out = st.error();
      return;
    }
    out = Listen();
  });
  t.join();
  return out;
}

Result<UniqueFd> OpenNetns(int proc_dir, pid_t pid) {
  UniqueFd ns(::openat(proc_dir, "ns/net", O_RDONLY | O_CLOEXEC));
  if (!ns) return Error::FromErrno("open the network namespace of the box's process " + std::to_string(pid));
  struct stat theirs {}, ours {};
  if (::fstat(ns.get(), &theirs) != 0 || ::stat("/proc/self/ns/net", &ours) != 0)
    return Error::FromErrno("compare the box's network namespace with this process's");
  if (theirs.st_dev == ours.st_dev && theirs.st_ino == ours.st_ino)
    return Error{"the box's process " + std::to_string(pid) +
                 " shares this process's network namespace (host network): refused, the egress proxy needs a "
                 "namespace of the box's own"};
  return ns;
}

Result<UniqueFd> OpenProcDir(pid_t pid) {
  if (pid <= 1) return Error{"the box's process id " + std::to_string(pid) + " is not a container's init"};
  UniqueFd dir(::open(("/proc/" + std::to_string(pid)).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir)
    return Error::FromErrno("open /proc/" + std::to_string(pid) +
                            " (the box's init; the daemon must run on the engine's host, in its pid namespace)");
  return dir;
}

Result<pid_t> RunningPid(const EngineClient& engine, const std::string& id) {
  LSB_ASSIGN_OR_RETURN(Json insp, engine.InspectContainer(id));
  const Json state = insp.value("State", Json::object());
  if (!state.value("Running", false)) return Error{"container " + id.substr(0, 12) + " is not running"};
  int64_t pid = state.value("Pid", int64_t{0});
  if (pid <= 1) return Error{"container " + id.substr(0, 12) + " reports no process id"};
  return static_cast<pid_t>(pid);
}

}  // namespace

Result<UniqueFd> ListenInNetworkOf(pid_t pid) {
  LSB_ASSIGN_OR_RETURN(UniqueFd dir, OpenProcDir(pid));
  LSB_ASSIGN_OR_RETURN(UniqueFd ns, OpenNetns(dir.get(), pid));
  return ListenIn(ns.get());
}

Result<std::unique_ptr<egress::EgressProxy>> AttachEgress(pid_t pid, egress::BoxEgress egress,
                                                          const egress::EgressOptions& opts) {
  LSB_ASSIGN_OR_RETURN(UniqueFd listener, ListenInNetworkOf(pid));
  return egress::ServeBoxEgress(std::move(listener), std::move(egress), opts);
}

Result<std::unique_ptr<egress::EgressProxy>> AttachEgress(const EngineClient& engine, const std::string& container_id,
                                                          egress::BoxEgress egress, const egress::EgressOptions& opts) {
  auto fail = [&](const Error& e) { return e.Wrap("attach the egress proxy to container " + container_id.substr(0, 12)); };
  auto pid = RunningPid(engine, container_id);
  if (!pid.ok()) return fail(pid.error());
  auto dir = OpenProcDir(*pid);
  if (!dir.ok()) return fail(dir.error());
  auto ns = OpenNetns(dir->get(), *pid);
  if (!ns.ok()) return fail(ns.error());
  // The namespace is held open now; if the container's init had died and its pid been reused
  // before, the container is no longer running with that pid.
  auto again = RunningPid(engine, container_id);
  if (!again.ok()) return fail(again.error());
  if (*again != *pid) return fail(Error{"its process id changed while its namespace was opened"});
  auto listener = ListenIn(ns->get());
  if (!listener.ok()) return fail(listener.error());
  return egress::ServeBoxEgress(std::move(*listener), std::move(egress), opts);
}

}  // namespace lsb::docker
