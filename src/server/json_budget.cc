#include "server/json_budget.h"

#include <string>

namespace lsb::server {
namespace {

size_t AsciiCost(unsigned char c) {
  if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t') return 2;
  if (c < 0x20) return 6;  // \u00XX
  return 1;
}

// The length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no overlongs, no surrogates,
// nothing above U+10FFFF), or 0 when there is none: the serializer replaces such bytes.
size_t Utf8Length(std::string_view s, size_t i) {
  auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = at(i);
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (at(i + 1) < lo || at(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if ((at(i + k) & 0xC0) != 0x80) return 0;
  return n;
}

// Walks `s` up to `max` encoded bytes; returns the raw bytes taken and adds their cost to *used.
size_t Walk(std::string_view s, size_t max, size_t* used) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = 1, cost;
    if (c < 0x80) {
      cost = AsciiCost(c);
    } else if ((len = Utf8Length(s, i)) > 0) {
      cost = len;
    } else {
      len = 1;
      cost = 3;  // replaced by U+FFFD
    }
    if (*used + cost > max) break;
    *used += cost;
    i += len;
  }
  return i;
}

}  // namespace

size_t JsonStringBytes(std::string_view s) {
  size_t used = 0;
  Walk(s, static_cast<size_t>(-1), &used);
  return used;
}

size_t JsonPrefixFor(std::string_view s, size_t max_bytes) {
  size_t used = 0;
  return Walk(s, max_bytes, &used);  // whole sequences only
}

size_t JsonBytes(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).size();
}

size_t FitResultJson(nlohmann::json& r, size_t max_bytes) {
  size_t bytes = JsonBytes(r);
  if (bytes <= max_bytes) return bytes;
  r["truncated"] = true;
  r["response_truncated"] = true;
  // A cut answer carries its output as text only: the exact bytes (stdout_base64) would not fit.
  r.erase("stdout_base64");
  r.erase("stderr_base64");
  bytes = JsonBytes(r);
  auto str = [&](const char* k) -> std::string {
    return r.contains(k) && r[k].is_string() ? r[k].get<std::string>() : std::string();
  };
  std::string out = str("stdout"), err = str("stderr");
  size_t out_cost = JsonStringBytes(out), err_cost = JsonStringBytes(err);
  size_t fixed = bytes > out_cost + err_cost ? bytes - out_cost - err_cost : 0;
  size_t room = max_bytes > fixed ? max_bytes - fixed : 0;
  // stderr gets up to a quarter of the room (it says why a program failed), stdout the rest.
  size_t err_room = std::min(err_cost, room / 4);
  size_t out_room = room - err_room;
  if (out_cost < out_room) err_room = std::min(err_cost, room - out_cost);
  if (r.contains("stdout")) r["stdout"] = out.substr(0, JsonPrefixFor(out, out_room));
  if (r.contains("stderr")) r["stderr"] = err.substr(0, JsonPrefixFor(err, err_room));
  bytes = JsonBytes(r);
  // Collected files, last first, become error entries: the caller learns which did not fit.
  if (bytes > max_bytes && r.contains("collected") && r["collected"].is_array()) {
    auto& c = r["collected"];
    for (size_t i = c.size(); i-- > 0 && bytes > max_bytes;) {
      if (!c[i].contains("content") && !c[i].contains("content_base64")) continue;
      c[i].erase("content");
      c[i].erase("content_base64");
      c[i]["error"] = "left out: the result did not fit its share (" + std::to_string(max_bytes) + " bytes) of the answer";
      bytes = JsonBytes(r);
    }
  }
  // So do rich outputs, last first.
  if (bytes > max_bytes && r.contains("outputs") && r["outputs"].is_array()) {
    auto& o = r["outputs"];
    for (size_t i = o.size(); i-- > 0 && bytes > max_bytes;) {
      if (o[i].contains("error")) continue;
      o[i] = {{"error", "left out: the result did not fit its share (" + std::to_string(max_bytes) + " bytes) of the answer"}};
      bytes = JsonBytes(r);
    }
  }
  if (bytes > max_bytes && r.contains("alerts") && r["alerts"].is_array()) {
    auto& a = r["alerts"];
    size_t before = a.size();
    while (!a.empty() && bytes > max_bytes) {
      a.erase(a.end() - 1);
      bytes = JsonBytes(r);
    }
    r["alerts_omitted"] = before - a.size();
    bytes = JsonBytes(r);
  }
  return bytes;
}

}  // namespace lsb::server
