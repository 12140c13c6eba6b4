#include "monitor/audit_history.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "base/bounded_json.h"
#include "base/unique_fd.h"
#include "monitor/cpu_share.h"

namespace lsb::monitor {
namespace {

using nlohmann::json;

constexpr size_t kChunk = 64u << 10;
constexpr size_t kMaxAlerts = 10;
constexpr size_t kMaxText = 1024;  // an error or alert message in an entry

struct LogFile {
  UniqueFd fd;
  uint64_t inode = 0;
  uint64_t size = 0;
};

// FILE, FILE.1, ... as they are now, each opened once (so a rename meanwhile does not matter); a
// file seen twice under two names (renamed while we listed) is kept once.
std::vector<LogFile> OpenNewestFirst(const std::string& path, int max_files) {
  std::vector<LogFile> files;
  for (int i = 0; i <= max_files; ++i) {
    std::string name = i == 0 ? path : path + "." + std::to_string(i);
    UniqueFd fd(::open(name.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) {
      if (i == 0) continue;  // FILE may be missing for a moment while it rotates
      break;
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    auto ino = static_cast<uint64_t>(st.st_ino);
    if (std::any_of(files.begin(), files.end(), [&](const LogFile& f) { return f.inode == ino; })) continue;
    files.push_back({std::move(fd), ino, static_cast<uint64_t>(st.st_size)});
  }
  return files;
}

// The complete lines of one file that end before `end`, last first. Keeps at most one line (plus
// one chunk) in memory; a line longer than `max_line` is reported as too long, not kept.
class BackwardLines {
 public:
  enum class Step { kLine, kTooLong, kStart };
  BackwardLines(int fd, uint64_t end, size_t max_line) : fd_(fd), pos_(end), end_(end), cap_(max_line + 1) {}

  Result<Step> Next(std::string* line) {
    if (first_) {  // `end` may be inside a line (the file's last, unfinished one): drop that part
      first_ = false;
      LSB_ASSIGN_OR_RETURN(auto nl, PrevNewline(end_));
      end_ = nl ? *nl + 1 : 0;
      Trim();
    }
    if (end_ == 0) return Step::kStart;
    overflow_ = false;
    LSB_ASSIGN_OR_RETURN(auto nl, PrevNewline(end_ - 1));  // end_ - 1 is this line's own '\n'
    uint64_t start = nl ? *nl + 1 : 0;
    Step s = overflow_ ? Step::kTooLong : Step::kLine;
    if (s == Step::kLine) *line = buf_.substr(start - pos_, end_ - 1 - start);
    end_ = start;
    Trim();
    return s;
  }
  uint64_t boundary() const { return end_; }  // the start of the last line returned
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  void Trim() { buf_.resize(std::min<uint64_t>(buf_.size(), end_ - pos_)); }

  // The offset of the last '\n' before `x`, reading back as needed. buf_ holds [pos_, pos_ +
  // buf_.size()); once the current line outgrows cap_, only the last chunk read is kept.
  Result<std::optional<uint64_t>> PrevNewline(uint64_t x) {
    for (;;) {
      uint64_t limit = std::min<uint64_t>(x, pos_ + buf_.size());
      if (limit > pos_) {
        size_t rel = buf_.rfind('\n', limit - pos_ - 1);
        if (rel != std::string::npos) return std::optional<uint64_t>(pos_ + rel);
      }
      if (pos_ == 0) return std::optional<uint64_t>();
      size_t want = static_cast<size_t>(std::min<uint64_t>(pos_, std::max(kChunk, std::min(buf_.size(), cap_))));
      std::string chunk(want, '\0');
      size_t got = 0;
      while (got < want) {
        ssize_t n = ::pread(fd_, chunk.data() + got, want - got, static_cast<off_t>(pos_ - want + got));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return Error::FromErrno("audit log: read");
        if (n == 0) return Error{"audit log: the file shrank while it was read"};
        got += static_cast<size_t>(n);
      }
      bytes_read_ += want;
      pos_ -= want;
      if (overflow_ || buf_.size() + want > cap_) {
        overflow_ = true;
        buf_ = std::move(chunk);
      } else {
        buf_.insert(0, chunk);
      }
    }
  }

  int fd_;
  uint64_t pos_;  // buf_ starts here
  uint64_t end_;  // the next line returned ends just before this offset
  size_t cap_;
  std::string buf_;
  bool first_ = true;
  bool overflow_ = false;
  uint64_t bytes_read_ = 0;
};

std::string Cut(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n) + "…"; }

enum class Kind { kString, kInt, kNumber, kBool };

bool Is(const json& v, Kind k) {
  switch (k) {
    case Kind::kString: return v.is_string();
    case Kind::kInt: return v.is_number_integer();
    case Kind::kNumber: return v.is_number();
    case Kind::kBool: return v.is_boolean();
  }
  return false;
}

void CopyTyped(const json& from, json& to, const char* key, Kind k, const char* as = nullptr) {
  auto it = from.find(key);
  if (it == from.end() || !Is(*it, k)) return;
  to[as ? as : key] = k == Kind::kString ? json(Cut(it->get<std::string>(), kMaxText)) : *it;
}

json AlertEntry(const json& a) {
  json out = json::object();
  if (!a.is_object()) return out;
  for (const char* k : {"kind", "severity", "rule", "message", "address", "path", "decision"})
    CopyTyped(a, out, k, Kind::kString);
  return out;
}

}  // namespace

std::optional<HistoryCursor> ParseHistoryCursor(const std::string& text) {
  size_t dot = text.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 >= text.size() || text.size() > 41) return std::nullopt;
  auto number = [](const std::string& s) -> std::optional<uint64_t> {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 19) return std::nullopt;
    return std::strtoull(s.c_str(), nullptr, 10);
  };
  auto ino = number(text.substr(0, dot));
  auto off = number(text.substr(dot + 1));
  if (!ino || !off) return std::nullopt;
  return HistoryCursor{*ino, *off};
}

std::string FormatHistoryCursor(const HistoryCursor& c) {
  return std::to_string(c.inode) + "." + std::to_string(c.offset);
}

json HistoryEntry(const json& r, size_t entry_bytes) {
  json e = json::object();
  for (const char* k : {"execution_id", "policy", "kind", "language", "session_id", "started_at", "time", "status",
                        "error", "code_sha256", "backend", "trust"})
    CopyTyped(r, e, k, Kind::kString);
  for (const char* k : {"exit_code", "signal", "code_bytes"}) CopyTyped(r, e, k, Kind::kInt);
  CopyTyped(r, e, "truncated", Kind::kBool);
  auto usage = r.find("usage");
  if (usage != r.end() && usage->is_object()) {
    for (const char* k : {"duration_ms", "cpu_ms", "memory_peak_bytes"}) CopyTyped(*usage, e, k, Kind::kInt);
    CopyTyped(*usage, e, "cpu_limit", Kind::kNumber);
    if (usage->contains("memory_peak_bytes") && (*usage)["memory_peak_bytes"].is_null()) e["memory_peak_bytes"] = nullptr;
  }
  if (e.contains("cpu_ms") && e.contains("duration_ms") && e.contains("cpu_limit")) {
    auto pct = CpuPercentOfLimit(e["cpu_ms"].get<double>(), e["duration_ms"].get<double>(), e["cpu_limit"].get<double>());
    if (pct) e["cpu_percent_of_limit"] = *pct;
  }
  auto alerts = r.find("alerts");
  if (alerts != r.end() && alerts->is_array()) {
    e["alerts"] = json::array();
    for (const auto& a : *alerts) {
      if (e["alerts"].size() >= kMaxAlerts) break;
      e["alerts"].push_back(AlertEntry(a));
    }
    if (alerts->size() > kMaxAlerts) e["alerts_omitted"] = alerts->size() - kMaxAlerts;
  }
  e["state"] = "finished";
  if (e.dump(-1, ' ', false, json::error_handler_t::replace).size() > entry_bytes && e.contains("alerts")) {
    e["alerts_omitted"] = e["alerts"].size() + e.value("alerts_omitted", size_t{0});
    e["alerts"] = json::array();
  }
  return e;
}

Result<HistoryPage> ReadHistory(const std::string& path, const HistoryQuery& q, const HistoryLimits& lim) {
  HistoryPage page;
  std::vector<LogFile> files = OpenNewestFirst(path, lim.max_files);
  size_t index = 0;
  uint64_t offset = files.empty() ? 0 : files[0].size;
  if (q.cursor) {
    auto it = std::find_if(files.begin(), files.end(), [&](const LogFile& f) { return f.inode == q.cursor->inode; });
    if (it == files.end() || q.cursor->offset > it->size) {
      page.cursor_expired = true;
      return page;
    }
    index = static_cast<size_t>(it - files.begin());
    offset = q.cursor->offset;
  }
  size_t page_bytes = 0;
  for (; index < files.size(); ++index, offset = index < files.size() ? files[index].size : 0) {
    const LogFile& f = files[index];
    BackwardLines lines(f.fd.get(), offset, lim.line_bytes);
    std::string line;
    for (;;) {
      uint64_t before = lines.boundary();
      if (page.scanned_bytes + lines.bytes_read() >= lim.scan_bytes) {
        page.scanned_bytes += lines.bytes_read();
        page.next = HistoryCursor{f.inode, before};
        return page;
      }
      LSB_ASSIGN_OR_RETURN(auto step, lines.Next(&line));
      if (step == BackwardLines::Step::kStart) break;
      if (step == BackwardLines::Step::kTooLong) {
        ++page.skipped_lines;
        continue;
      }
      ParsedJson rec = ParseBoundedJson(line, {lim.line_bytes, kJsonMaxDepth, kJsonMaxElements});
      if (!rec.ok() || !rec->is_object()) {
        ++page.skipped_lines;
        continue;
      }
      const json& r = *rec;
      auto type = r.find("type");
      if (type == r.end() || *type != "execution") continue;  // alert records: in their execution's
      auto owner = r.find("owner");
      std::string who = owner != r.end() && owner->is_string() ? owner->get<std::string>() : "";
      if (who != q.owner || !q.filter.Matches(r)) continue;
      json entry = HistoryEntry(r, lim.entry_bytes);
      size_t bytes = entry.dump(-1, ' ', false, json::error_handler_t::replace).size();
      if (!page.executions.empty() && page_bytes + bytes > lim.page_bytes) {
        page.scanned_bytes += lines.bytes_read();
        page.next = HistoryCursor{f.inode, before};  // this record opens the next page
        return page;
      }
      page_bytes += bytes;
      page.executions.push_back(std::move(entry));
      if (page.executions.size() >= q.limit) {
        page.scanned_bytes += lines.bytes_read();
        if (lines.boundary() > 0) {
          page.next = HistoryCursor{f.inode, lines.boundary()};
        } else if (index + 1 < files.size()) {
          page.next = HistoryCursor{files[index + 1].inode, files[index + 1].size};
        }
        return page;
      }
    }
    page.scanned_bytes += lines.bytes_read();
  }
  return page;
}

}  // namespace lsb::monitor
