#include "egress/egress_proxy.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "egress/proxy_connection.h"

namespace lsb::egress {

using Clock = std::chrono::steady_clock;

Result<std::unique_ptr<EgressProxy>> EgressProxy::Create(UniqueFd listener, EgressRules rules, EgressOptions opts,
                                                         std::vector<HeaderSecret> secrets, std::shared_ptr<BoxCa> ca) {
  if (!listener) return Error{"the egress proxy has no listening socket"};
  // A connection is accepted once its first bytes (the request head) are there: one wakeup of the
  // proxy for connect + head instead of two, and a connection that sends nothing holds no thread.
  int defer_s = static_cast<int>(std::max<uint64_t>(1, opts.head_timeout_ms / 1000));
  ::setsockopt(listener.get(), IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer_s, sizeof defer_s);
  UniqueFd stop(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop) return Error::FromErrno("eventfd for the egress proxy");
  SslCtxPtr upstream_tls;
  if (ca) {
    LSB_ASSIGN_OR_RETURN(upstream_tls, UpstreamContext(opts.upstream_ca_file));
  }
  return std::unique_ptr<EgressProxy>(new EgressProxy(std::move(listener), std::move(stop), std::move(rules), std::move(opts),
                                                     std::move(secrets), std::move(ca), std::move(upstream_tls)));
}

EgressProxy::EgressProxy(UniqueFd listener, UniqueFd stop, EgressRules rules, EgressOptions opts,
                         std::vector<HeaderSecret> secrets, std::shared_ptr<BoxCa> ca, SslCtxPtr upstream_tls)
    : listener_(std::move(listener)),
      stop_(std::move(stop)),
      rules_(std::move(rules)),
      opts_(std::move(opts)),
      secrets_(std::move(secrets)),
      ca_(std::move(ca)),
      upstream_tls_(std::move(upstream_tls)),
      resolver_(opts_.pins),
      host_own_(HostAddresses()) {}

EgressProxy::~EgressProxy() { Stop(); }

void EgressProxy::BeginRun() {
  std::lock_guard<std::mutex> lock(mu_);
  bytes_used_ = 0;
  run_start_ = Clock::now();
  if (!started_ && !stopped_) {
    started_ = true;
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }
}

void EgressProxy::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  uint64_t one = 1;
  (void)!::write(stop_.get(), &one, sizeof one);  // wakes the acceptor and every connection
  if (acceptor_.joinable()) acceptor_.join();
  std::list<Worker> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(workers_);
  }
  for (auto& w : all)
    if (w.thread.joinable()) w.thread.join();
  listener_.reset();
}

uint32_t EgressProxy::open_connections() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_;
}

void EgressProxy::Record(protocol::Event e) {
  std::lock_guard<std::mutex> lock(mu_);
  e.time_ms = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - run_start_).count());
  if (events_.size() >= opts_.max_events_per_run) {
    ++dropped_;
    return;
  }
  events_.push_back(std::move(e));
}

std::vector<protocol::Event> EgressProxy::TakeEvents(std::chrono::milliseconds settle) {
  std::unique_lock<std::mutex> lock(mu_);
  if (settle.count() > 0) idle_.wait_for(lock, settle, [this] { return open_ == 0; });
  std::vector<protocol::Event> out;
  out.swap(events_);
  if (dropped_ > 0) {
    protocol::Event e;
    e.kind = "egress";
    e.message = std::to_string(dropped_) + " more egress events were not kept (" +
                std::to_string(opts_.max_events_per_run) + " per execution)";
    e.count = dropped_;
    out.push_back(std::move(e));
    dropped_ = 0;
  }
  return out;
}

void EgressProxy::ReapDone() {
  std::list<Worker> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = workers_.begin(); it != workers_.end();) {
      if (it->done) done.splice(done.end(), workers_, it++);
      else ++it;
    }
  }
  for (auto& w : done) w.thread.join();
}

void EgressProxy::Refuse(UniqueFd client, const std::string& why) {
  static const std::string kAnswer =
      "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
  (void)!::send(client.get(), kAnswer.data(), kAnswer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  protocol::Event e = protocol::MakeAlert(protocol::AlertRule::kNetworkDenied, "egress",
                                          "a connection to the egress proxy was refused: " + why);
  e.decision = "denied";
  Record(std::move(e));
}

void EgressProxy::AcceptLoop() {
  for (;;) {
    ReapDone();
    pollfd p[2] = {{listener_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    int n = ::poll(p, 2, 1000);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || (p[1].revents & POLLIN)) return;
    if (!(p[0].revents & POLLIN)) continue;
    UniqueFd client(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!client) continue;
    int one = 1;  // relayed bytes go out as they come, not held for an ACK
    ::setsockopt(client.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::unique_lock<std::mutex> lock(mu_);
    if (open_ >= opts_.max_connections) {
      lock.unlock();
      Refuse(std::move(client), std::to_string(opts_.max_connections) + " connections are open already (the limit per box)");
      continue;
    }
    if (opts_.slots && !opts_.slots->TryTake(opts_.max_connections_total)) {
      lock.unlock();
      Refuse(std::move(client), std::to_string(opts_.max_connections_total) +
                                    " egress connections are open across every box of this daemon already (the "
                                    "limit across boxes, --egress-max-connections-total)");
      continue;
    }
    ++open_;
    workers_.emplace_back();
    Worker* w = &workers_.back();
    w->thread = std::thread([this, w, fd = std::move(client)]() mutable {
      ConnectionContext ctx{&rules_, &resolver_, &host_own_, &opts_, &bytes_used_, &secrets_, ca_.get(), upstream_tls_.get(),
                            Waits{stop_.get()}, &rate_};
      protocol::Event e = ServeConnection(fd.get(), ctx);
      fd.reset();
      Record(std::move(e));
      if (opts_.slots) opts_.slots->Release();
      std::lock_guard<std::mutex> l(mu_);
      --open_;
      w->done = true;
      idle_.notify_all();
    });
  }
}

}  // namespace lsb::egress
