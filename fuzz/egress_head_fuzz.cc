// libFuzzer target: what a program in a box sends the egress proxy first: a request head (absolute
// form or CONNECT) and, in a tunnel, the TLS ClientHello whose SNI is checked. The first byte picks
// which; every verdict must be a value, never a crash, and an accepted target keeps its shape.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "egress/http_head.h"
#include "egress/tls_client_hello.h"

namespace {

void CheckTarget(const lsb::egress::ProxyTarget& t) {
  if (t.host.empty() || t.port == 0) __builtin_trap();
  for (char c : t.host)
    if (c == '\r' || c == '\n' || c == '\0' || c == ' ' || c == '/') __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    auto sni = lsb::egress::ParseClientHelloSni(in);
    if (sni.status == lsb::egress::ClientHelloSni::Status::kOk && sni.record_bytes > in.size()) __builtin_trap();
    return 0;
  }
  auto head = lsb::egress::ParseRequestHead(in);
  if (!head.ok()) return 0;
  auto t = head->method == "CONNECT" ? lsb::egress::ParseConnectTarget(head->target)
                                     : lsb::egress::ParseAbsoluteTarget(head->target);
  if (t.ok()) CheckTarget(*t);
  return 0;
}
