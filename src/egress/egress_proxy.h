// One box's egress proxy (docs/network.md): serves the listening socket the launcher made in the
// box's network namespace, from the host's namespace, where the box's code cannot reach. Each
// accepted connection gets a thread of its own, at most EgressOptions.max_connections at once and
// max_connections_total across every proxy sharing EgressOptions.slots (more are refused with 503
// and an alert); each connection is one event. Stopping (or destroying)
// the proxy closes the listener, ends every connection and joins every thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "egress/box_ca.h"
#include "egress/egress_options.h"
#include "egress/egress_rules.h"
#include "egress/rate_limiter.h"
#include "egress/resolver.h"
#include "egress/secrets.h"
#include "protocol/messages.h"

namespace lsb::egress {

class EgressProxy {
 public:
  // `secrets`: network.secrets resolved (secrets.h), the headers added for their hosts; `ca`
  // (box_ca.h, its certificate in the box's trust bundle) lets the proxy add them over HTTPS too:
  // without it a CONNECT to such a host is refused.
  static Result<std::unique_ptr<EgressProxy>> Create(UniqueFd listener, EgressRules rules, EgressOptions opts,
                                                     std::vector<HeaderSecret> secrets = {},
                                                     std::shared_ptr<BoxCa> ca = nullptr);
  ~EgressProxy();
  EgressProxy(const EgressProxy&) = delete;
  EgressProxy& operator=(const EgressProxy&) = delete;

  // An execution begins: its byte budget and clock start now; the first call starts serving (not
  // before, so a process that forks between Start and its first run forks with no proxy thread).
  void BeginRun();
  // The events since the last call. With `settle` > 0 it first waits, at most that long, until no
  // connection is open (the program has exited: its connections are closing), so a run's result
  // holds its connections' events.
  std::vector<protocol::Event> TakeEvents(std::chrono::milliseconds settle);
  void Stop();

  uint32_t open_connections() const;

 private:
  EgressProxy(UniqueFd listener, UniqueFd stop, EgressRules rules, EgressOptions opts, std::vector<HeaderSecret> secrets,
              std::shared_ptr<BoxCa> ca, SslCtxPtr upstream_tls);
  struct Worker {
    std::thread thread;
    bool done = false;
  };
  void AcceptLoop();
  void Refuse(UniqueFd client, const std::string& why);
  void Record(protocol::Event e);
  void ReapDone();  // joins finished workers; caller holds no lock

  UniqueFd listener_;
  UniqueFd stop_;  // eventfd, readable once stopping
  EgressRules rules_;
  EgressOptions opts_;
  std::vector<HeaderSecret> secrets_;
  std::shared_ptr<BoxCa> ca_;
  SslCtxPtr upstream_tls_;
  Resolver resolver_;
  std::vector<IpAddress> host_own_;
  std::atomic<uint64_t> bytes_used_{0};
  RateLimiter rate_{opts_.max_bytes_per_second};  // every connection of the box draws from it

  mutable std::mutex mu_;
  std::condition_variable idle_;
  std::list<Worker> workers_;
  uint32_t open_ = 0;
  std::vector<protocol::Event> events_;
  size_t dropped_ = 0;
  std::chrono::steady_clock::time_point run_start_ = std::chrono::steady_clock::now();
  std::thread acceptor_;
  bool started_ = false, stopped_ = false;
};

}  // namespace lsb::egress
