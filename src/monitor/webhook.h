// Webhooks: alerts POSTed as JSON to configured http:// URLs, signed, retried with backoff, on
// their own thread behind a bounded queue, so an execution never waits for a receiver.
//
//   POST <path>  Content-Type: application/json
//   X-LLM-Sandbox-Event: alert
//   X-LLM-Sandbox-Delivery: <unique id, the same on every retry>
//   X-LLM-Sandbox-Signature: sha256=<hex HMAC-SHA256 of the body with the shared secret>
//
// A 2xx answer delivers; a connection error, a timeout, 408, 429 or 5xx is retried (backoff
// 0.5s, 1s, 2s, ... up to `attempts`); any other answer is a permanent failure. A full queue drops
// the new alert. Outcomes are counted in the metrics (lsb_webhook_*).
//
// Concurrency: `mu_` guards the queue and `stopping_`; the sender thread owns its sockets.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "monitor/metrics.h"
#include "protocol/wire_values.h"

namespace lsb::monitor {

struct WebhookUrl {
  std::string host;
  uint16_t port = 80;
  std::string path = "/";
  std::string text;  // as given
};

// Only http:// (a receiver on the same host or network; put a TLS proxy in front for https).
Result<WebhookUrl> ParseWebhookUrl(const std::string& url);

struct WebhookOptions {
  std::vector<WebhookUrl> urls;
  std::string secret;           // HMAC key; "" = unsigned (the daemon warns)
  size_t queue_limit = 1000;
  int attempts = 5;
  int first_backoff_ms = 500;
  int timeout_ms = 5000;        // connect / send / receive, each
  protocol::Severity min_severity = protocol::Severity::kWarning;  // info < warning < critical
};

class WebhookSender {
 public:
  WebhookSender(WebhookOptions opts, Metrics& metrics);
  ~WebhookSender();  // stops: what is still queued is dropped (and counted)
  WebhookSender(const WebhookSender&) = delete;
  WebhookSender& operator=(const WebhookSender&) = delete;

  // Queues `body` for every URL when `severity` reaches the minimum; never blocks.
  void Send(const std::string& event, protocol::Severity severity, std::string body);
  void Stop();

 private:
  struct Delivery {
    size_t url;
    std::string event;
    std::string id;
    std::string body;
  };
  void Loop();
  // One attempt: the HTTP status, or an Error for a transport failure.
  Result<int> Post(const WebhookUrl& url, const Delivery& d) const;

  WebhookOptions opts_;
  Metrics& metrics_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Delivery> queue_;
  bool stopping_ = false;
  uint64_t next_id_ = 0;
  std::thread thread_;
};

}  // namespace lsb::monitor
