#include "runtime/docker/stream_pump.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "runtime/docker/stream_demux.h"

namespace lsb::docker {
namespace {

constexpr size_t kMaxPending = 1 << 20;  // per direction; beyond it we stop reading that side
constexpr size_t kMaxDiag = 64 * 1024;

Status SetNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) return Error::FromErrno("fcntl(O_NONBLOCK)");
  return OkStatus();
}

// Writes what it can of `buf` without blocking; false on a broken peer.
bool Flush(int fd, std::string* buf) {
  while (!buf->empty()) {
    ssize_t n = send(fd, buf->data(), buf->size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    buf->erase(0, static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

Result<std::unique_ptr<StreamPump>> StreamPump::Start(UniqueFd attach, std::string initial, std::string label) {
  std::unique_ptr<StreamPump> p(new StreamPump());
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) return Error::FromErrno("socketpair");
  p->pump_end_.reset(sp[0]);
  p->runner_end_.reset(sp[1]);
  int pp[2];
  if (pipe2(pp, O_CLOEXEC | O_NONBLOCK) < 0) return Error::FromErrno("pipe2");
  p->wake_read_.reset(pp[0]);
  p->wake_write_.reset(pp[1]);
  p->attach_ = std::move(attach);
  LSB_TRY(SetNonBlocking(p->attach_.get()));
  LSB_TRY(SetNonBlocking(p->pump_end_.get()));
  p->initial_ = std::move(initial);
  p->label_ = std::move(label);
  p->thread_ = std::thread([raw = p.get()] { raw->Run(); });
  return p;
}

StreamPump::~StreamPump() {
  if (thread_.joinable()) {
    char c = 'x';
    (void)!write(wake_write_.get(), &c, 1);
    thread_.join();
  }
}

std::string StreamPump::Diagnostics() const {
  std::lock_guard<std::mutex> lock(mu_);
  return diag_;
}

void StreamPump::AppendDiag(std::string_view s) {
  static const bool echo = std::getenv("LSB_DOCKER_DEBUG") != nullptr;
  if (echo) std::fprintf(stderr, "[%s init] %.*s", label_.c_str(), static_cast<int>(s.size()), s.data());
  std::lock_guard<std::mutex> lock(mu_);
  diag_.append(s);
  if (diag_.size() > kMaxDiag) diag_.erase(0, diag_.size() - kMaxDiag);
}

void StreamPump::Run() {
  StreamDemuxer demux;
  demux.Feed(initial_);
  initial_.clear();
  std::string to_runner, to_engine;
  bool engine_eof = false, runner_eof = false, runner_shut = false, engine_shut = false;
  char buf[65536];
  auto drain_demux = [&]() -> bool {
    for (;;) {
      auto f = demux.Next();
      if (!f.ok()) {
        AppendDiag("llm-sandbox: " + f.error().message + "\n");
        return false;
      }
      if (!f->has_value()) return true;
      if ((*f)->stream == StdStream::kStdout) {
        to_runner.append((*f)->payload);
      } else {
        AppendDiag((*f)->payload);
      }
    }
  };
  if (!drain_demux()) engine_eof = true;
  for (;;) {
    if (engine_eof && to_runner.empty() && !runner_shut) {
      shutdown(pump_end_.get(), SHUT_WR);  // the runner reads EOF: init is gone
      runner_shut = true;
      alive_ = false;
    }
    if (runner_eof && to_engine.empty() && !engine_shut && !engine_eof) {
      shutdown(attach_.get(), SHUT_WR);
      engine_shut = true;
    }
    if (runner_shut && (runner_eof || engine_eof)) break;
    pollfd p[3] = {{wake_read_.get(), POLLIN, 0}, {attach_.get(), 0, 0}, {pump_end_.get(), 0, 0}};
    if (!engine_eof && to_runner.size() < kMaxPending) p[1].events |= POLLIN;
    if (!engine_eof && !to_engine.empty()) p[1].events |= POLLOUT;
    if (!runner_eof && to_engine.size() < kMaxPending) p[2].events |= POLLIN;
    if (!to_runner.empty() && !runner_shut) p[2].events |= POLLOUT;
    if (poll(p, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (p[0].revents) break;  // the owner is going away
    if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = recv(attach_.get(), buf, sizeof(buf), 0);
      if (n > 0) {
        demux.Feed(std::string_view(buf, static_cast<size_t>(n)));
        if (!drain_demux()) engine_eof = true;
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        engine_eof = true;
      }
    }
    if ((p[1].events & POLLOUT) && (p[1].revents & POLLOUT)) {
      if (!Flush(attach_.get(), &to_engine)) engine_eof = true;
    }
    if (p[2].revents & (POLLIN | POLLHUP)) {
      ssize_t n = recv(pump_end_.get(), buf, sizeof(buf), 0);
      if (n > 0) {
        to_engine.append(buf, static_cast<size_t>(n));
        if (!engine_eof && !Flush(attach_.get(), &to_engine)) engine_eof = true;
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        runner_eof = true;
      }
    }
    if ((p[2].events & POLLOUT) && (p[2].revents & (POLLOUT | POLLERR))) {
      if (!Flush(pump_end_.get(), &to_runner)) {
        to_runner.clear();
        runner_eof = true;
      }
    }
    if (engine_eof) to_engine.clear();
  }
  alive_ = false;
}

}  // namespace lsb::docker
