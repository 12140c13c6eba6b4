#include "runtime/docker/http_codec.h"

#include <algorithm>
#include <cctype>

namespace lsb::docker {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool HasHeader(const HttpRequest& req, std::string_view lower) {
  for (const auto& [k, v] : req.headers)
    if (Lower(k) == lower) return true;
  return false;
}

}  // namespace

std::string HttpResponse::Header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

std::string EncodeRequest(const HttpRequest& req) {
  std::string out = req.method + " " + req.target + " HTTP/1.1\r\n";
  // The engine ignores Host on a unix socket but HTTP/1.1 requires one.
  if (!HasHeader(req, "host")) out += "Host: docker\r\n";
  bool sends_body = !req.body.empty() || req.method == "POST" || req.method == "PUT";
  if (sends_body && !HasHeader(req, "content-length"))
    out += "Content-Length: " + std::to_string(req.body.size()) + "\r\n";
  for (const auto& [k, v] : req.headers) out += k + ": " + v + "\r\n";
  out += "\r\n";
  out += req.body;
  return out;
}

Status ResponseParser::Feed(std::string_view bytes) {
  if (state_ == State::kDone) return OkStatus();
  buf_.append(bytes);
  bool progressed = true;
  while (progressed && state_ != State::kDone) {
    if (stop_after_headers_ && headers_done()) break;
    LSB_TRY(Step(&progressed));
  }
  // Compact what has been consumed, except while the raw rest may still be taken.
  if (pos_ > 4096 && !(stop_after_headers_ && headers_done())) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  return OkStatus();
}

Status ResponseParser::FeedEof() {
  if (state_ == State::kUntilClose || state_ == State::kDone) {
    state_ = State::kDone;
    return OkStatus();
  }
  if (stop_after_headers_ && headers_done()) return OkStatus();
  return Error{headers_done() ? "engine closed the connection in the middle of a response body"
                              : "engine closed the connection before a complete response"};
}

std::string ResponseParser::TakeRest() {
  std::string rest = buf_.substr(pos_);
  buf_.clear();
  pos_ = 0;
  return rest;
}

Status ResponseParser::ParseHead(std::string_view head) {
  size_t eol = head.find("\r\n");
  std::string_view status_line = head.substr(0, eol);
  // "HTTP/1.1 200 OK"
  if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12 || status_line[8] != ' ')
    return Error{"malformed HTTP status line from the engine: '" + std::string(status_line.substr(0, 80)) + "'"};
  std::string_view code = status_line.substr(9, 3);
  if (!std::all_of(code.begin(), code.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return Error{"malformed HTTP status code from the engine"};
  resp_.status = std::stoi(std::string(code));
  resp_.reason = std::string(Trim(status_line.size() > 12 ? status_line.substr(13) : std::string_view()));
  size_t pos = eol == std::string_view::npos ? head.size() : eol + 2;
  while (pos < head.size()) {
    size_t end = head.find("\r\n", pos);
    if (end == std::string_view::npos) end = head.size();
    std::string_view line = head.substr(pos, end - pos);
    pos = end + 2;
    if (line.empty()) continue;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0)
      return Error{"malformed HTTP header from the engine: '" + std::string(line.substr(0, 80)) + "'"};
    std::string name = Lower(Trim(line.substr(0, colon)));
    std::string value(Trim(line.substr(colon + 1)));
    auto [it, inserted] = resp_.headers.emplace(name, value);
    if (!inserted) it->second += ", " + value;
  }
  // Which body framing follows (RFC 9112 §6.3, the cases the engine uses).
  bool no_body = head_only_ || resp_.status / 100 == 1 || resp_.status == 204 || resp_.status == 304;
  std::string te = Lower(resp_.Header("transfer-encoding"));
  std::string cl = resp_.Header("content-length");
  if (no_body) {
    state_ = State::kDone;
  } else if (te.find("chunked") != std::string::npos) {
    state_ = State::kChunkSize;
  } else if (!cl.empty()) {
    if (cl.find_first_not_of("0123456789") != std::string::npos || cl.size() > 12)
      return Error{"malformed Content-Length from the engine: '" + cl + "'"};
    remaining_ = std::stoull(cl);
    if (remaining_ > kMaxBodyBytes) return Error{"engine response body too large (" + cl + " bytes)"};
    state_ = remaining_ == 0 ? State::kDone : State::kBody;
  } else {
    state_ = State::kUntilClose;
  }
  return OkStatus();
}

Status ResponseParser::Step(bool* progressed) {
  *progressed = false;
  std::string_view avail(buf_.data() + pos_, buf_.size() - pos_);
  switch (state_) {
    case State::kHeaders: {
      size_t end = avail.find("\r\n\r\n");
      if (end == std::string_view::npos) {
        if (avail.size() > kMaxHeaderBytes) return Error{"engine response headers too large"};
        return OkStatus();
      }
      LSB_TRY(ParseHead(avail.substr(0, end + 2)));
      pos_ += end + 4;
      *progressed = true;
      return OkStatus();
    }
    case State::kBody:
    case State::kChunkData: {
      if (avail.empty()) return OkStatus();
      size_t n = std::min(remaining_, avail.size());
      resp_.body.append(avail.substr(0, n));
      pos_ += n;
      remaining_ -= n;
      if (remaining_ == 0) state_ = state_ == State::kBody ? State::kDone : State::kChunkDataEnd;
      *progressed = true;
      return OkStatus();
    }
    case State::kChunkDataEnd: {
      if (avail.size() < 2) return OkStatus();
      if (avail.substr(0, 2) != "\r\n") return Error{"malformed chunked body from the engine: no CRLF after a chunk"};
      pos_ += 2;
      state_ = State::kChunkSize;
      *progressed = true;
      return OkStatus();
    }
    case State::kChunkSize: {
      size_t eol = avail.find("\r\n");
      if (eol == std::string_view::npos) {
        if (avail.size() > 1024) return Error{"malformed chunked body from the engine: chunk size line too long"};
        return OkStatus();
      }
      std::string_view line = avail.substr(0, eol);
      line = line.substr(0, line.find(';'));  // chunk extensions are ignored
      line = Trim(line);
      if (line.empty() || line.size() > 15 || line.find_first_not_of("0123456789abcdefABCDEF") != std::string_view::npos)
        return Error{"malformed chunk size from the engine: '" + std::string(line.substr(0, 20)) + "'"};
      remaining_ = std::stoull(std::string(line), nullptr, 16);
      if (resp_.body.size() + remaining_ > kMaxBodyBytes) return Error{"engine response body too large"};
      pos_ += eol + 2;
      state_ = remaining_ == 0 ? State::kTrailers : State::kChunkData;
      *progressed = true;
      return OkStatus();
    }
    case State::kTrailers: {
      size_t eol = avail.find("\r\n");
      if (eol == std::string_view::npos) return OkStatus();
      pos_ += eol + 2;
      if (eol == 0) state_ = State::kDone;  // the empty line ends the trailers
      *progressed = true;
      return OkStatus();
    }
    case State::kUntilClose: {
      if (avail.empty()) return OkStatus();
      if (resp_.body.size() + avail.size() > kMaxBodyBytes) return Error{"engine response body too large"};
      resp_.body.append(avail);
      pos_ += avail.size();
      *progressed = true;
      return OkStatus();
    }
    case State::kDone:
      return OkStatus();
  }
  return OkStatus();
}

std::string UrlEncode(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace lsb::docker
