#include "monitor/webhook.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>

#include "base/io.h"
#include "base/unique_fd.h"
#include "base/sha256.h"

namespace lsb::monitor {

Result<WebhookUrl> ParseWebhookUrl(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0)
    return Error{"webhook URL '" + url + "': only http:// is supported (put a TLS-terminating proxy in front "
                 "for https receivers)"};
  WebhookUrl u;
  u.text = url;
  std::string rest = url.substr(scheme.size());
  size_t slash = rest.find('/');
  std::string hostport = rest.substr(0, slash);
  u.path = slash == std::string::npos ? "/" : rest.substr(slash);
  size_t colon = hostport.rfind(':');
  if (colon != std::string::npos && hostport.find(']') == std::string::npos) {
    std::string port = hostport.substr(colon + 1);
    char* end = nullptr;
    unsigned long p = std::strtoul(port.c_str(), &end, 10);
    if (port.empty() || *end != '\0' || p == 0 || p > 65535) return Error{"webhook URL '" + url + "': bad port"};
    u.port = static_cast<uint16_t>(p);
    hostport = hostport.substr(0, colon);
  }
  if (hostport.size() > 2 && hostport.front() == '[' && hostport.back() == ']') hostport = hostport.substr(1, hostport.size() - 2);
  if (hostport.empty()) return Error{"webhook URL '" + url + "': no host"};
  u.host = hostport;
  return u;
}

WebhookSender::WebhookSender(WebhookOptions opts, Metrics& metrics) : opts_(std::move(opts)), metrics_(metrics) {
  thread_ = std::thread([this] { Loop(); });
}

WebhookSender::~WebhookSender() { Stop(); }

void WebhookSender::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  if (!queue_.empty()) metrics_.Inc("lsb_webhook_dropped_total", {}, static_cast<double>(queue_.size()));
  queue_.clear();
}

void WebhookSender::Send(const std::string& event, protocol::Severity severity, std::string body) {
  if (opts_.urls.empty() || severity < opts_.min_severity) return;  // the enum is in rising order
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return;
  for (size_t i = 0; i < opts_.urls.size(); ++i) {
    if (queue_.size() >= opts_.queue_limit) {
      metrics_.Inc("lsb_webhook_dropped_total");
      continue;
    }
    queue_.push_back(Delivery{i, event, "wh-" + std::to_string(::getpid()) + "-" + std::to_string(++next_id_), body});
  }
  cv_.notify_one();
}

Result<int> WebhookSender::Post(const WebhookUrl& url, const Delivery& d) const {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(url.host.c_str(), std::to_string(url.port).c_str(), &hints, &res);
  if (rc != 0) return Error{"resolve " + url.host + ": " + ::gai_strerror(rc)};
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> guard(res, ::freeaddrinfo);
  UniqueFd fd;
  std::string last = "no address";
  for (addrinfo* a = res; a; a = a->ai_next) {
    UniqueFd s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!s) continue;
    timeval tv{opts_.timeout_ms / 1000, (opts_.timeout_ms % 1000) * 1000};
    ::setsockopt(s.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);  // bounds connect() too
    ::setsockopt(s.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (::connect(s.get(), a->ai_addr, a->ai_addrlen) == 0) {
      fd = std::move(s);
      break;
    }
    last = std::strerror(errno);
  }
  if (!fd) return Error{"connect " + url.host + ":" + std::to_string(url.port) + ": " + last};
  std::string sig = opts_.secret.empty() ? "" : "sha256=" + Hex(HmacSha256(opts_.secret, d.body));
  std::string req = "POST " + url.path + " HTTP/1.1\r\nHost: " + url.host + ":" + std::to_string(url.port) +
                    "\r\nUser-Agent: llm-sandbox\r\nContent-Type: application/json\r\nContent-Length: " +
                    std::to_string(d.body.size()) + "\r\nConnection: close\r\nX-LLM-Sandbox-Event: " + d.event +
                    "\r\nX-LLM-Sandbox-Delivery: " + d.id + "\r\n" +
                    (sig.empty() ? "" : "X-LLM-Sandbox-Signature: " + sig + "\r\n") + "\r\n" + d.body;
  auto w = WriteAll(fd.get(), req);
  if (!w.ok()) return Error{"send: " + w.error().message};
  // The status line is all we need: "HTTP/1.1 204 No Content".
  std::string head;
  char buf[512];
  while (head.find("\r\n") == std::string::npos && head.size() < 4096) {
    ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error{n == 0 ? "connection closed before an answer" : std::string("receive: ") + std::strerror(errno)};
    head.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  if (std::sscanf(head.c_str(), "HTTP/%*d.%*d %d", &status) != 1) return Error{"not an HTTP answer"};
  return status;
}

void WebhookSender::Loop() {
  for (;;) {
    Delivery d;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      d = std::move(queue_.front());
      queue_.pop_front();
    }
    const WebhookUrl& url = opts_.urls[d.url];
    int backoff = opts_.first_backoff_ms;
    std::string outcome = "failed";
    for (int attempt = 1; attempt <= opts_.attempts; ++attempt) {
      auto st = Post(url, d);
      if (st.ok() && *st >= 200 && *st < 300) {
        outcome = "delivered";
        break;
      }
      bool retry = !st.ok() || *st == 408 || *st == 429 || *st >= 500;
      std::fprintf(stderr, "serve: webhook %s attempt %d: %s\n", url.text.c_str(), attempt,
                   st.ok() ? ("HTTP " + std::to_string(*st)).c_str() : st.error().message.c_str());
      if (!retry || attempt == opts_.attempts) break;
      metrics_.Inc("lsb_webhook_retries_total");
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, std::chrono::milliseconds(backoff), [&] { return stopping_; })) return;
      backoff *= 2;
    }
    metrics_.Inc("lsb_webhook_deliveries_total", {{"outcome", outcome}});
  }
}

}  // namespace lsb::monitor
