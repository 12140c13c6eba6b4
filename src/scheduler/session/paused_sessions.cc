#include "scheduler/session/paused_sessions.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/io.h"
#include "base/random_id.h"
#include "base/unique_fd.h"
#include "scheduler/session/session_manager.h"

namespace lsb::sched {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {
// meta.json is small (names, a setup); anything larger was not written by Save.
constexpr uintmax_t kMaxMetaBytes = 4u << 20;

// A new file, readable by the daemon's user only (base/io.h's WriteFile writes existing ones).
Status WriteNewFile(const std::string& path, std::string_view data) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return Error::FromErrno("open " + path + " for writing");
  LSB_TRY(WriteAll(fd.get(), data));
  if (::fsync(fd.get()) != 0) return Error::FromErrno("fsync " + path);
  return OkStatus();
}

json Strings(const std::vector<std::string>& v) { return json(v); }

int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A record's meta.json, or a discarded value when it is missing, too large or not JSON.
json ReadMeta(const fs::path& d) {
  std::error_code ec;
  auto size = fs::file_size(d / "meta.json", ec);
  if (ec || size > kMaxMetaBytes) return json::value_t::discarded;
  auto text = ReadFile((d / "meta.json").string());
  if (!text.ok()) return json::value_t::discarded;
  return json::parse(*text, nullptr, false);
}

// When a record was paused: its meta's time, else (a record written before it was kept, or a
// damaged one) the directory's modification time.
int64_t PausedAt(const fs::path& d, const json& m) {
  if (m.is_object() && m.contains("paused_at_unix") && m["paused_at_unix"].is_number_integer())
    return m["paused_at_unix"].get<int64_t>();
  struct stat st {};
  if (::stat(d.c_str(), &st) != 0) return NowUnix();
  return st.st_mtime;
}

uint64_t DirBytes(const fs::path& d) {
  std::error_code ec;
  uint64_t n = 0;
  for (const auto& f : fs::directory_iterator(d, ec)) {
    auto sz = f.file_size(ec);
    if (!ec) n += sz;
  }
  return n;
}
}  // namespace

bool IsSessionId(const std::string& id) {
  if (id.size() < 20 || id.compare(0, 4, "ses-") != 0) return false;
  for (size_t i = 4; i < 20; ++i)
    if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f'))) return false;
  if (id.size() == 20) return true;
  // "-<node>" (serve's --node-name rule: never '/' or '.').
  return id[20] == '-' && IsNodeName(id.substr(21));
}

std::vector<PausedSessions::Entry> PausedSessions::Scan() const {
  std::vector<Entry> out;
  std::error_code ec;
  const int64_t now = NowUnix();
  std::vector<fs::path> expired;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    const std::string name = e.path().filename().string();
    if (!IsSessionId(name)) continue;
    json m = ReadMeta(e.path());
    Entry en{name, m.is_object() ? m.value("owner", "") : "", PausedAt(e.path(), m), DirBytes(e.path())};
    if (now - en.paused_at_unix >= static_cast<int64_t>(limits_.ttl_s)) {
      expired.push_back(e.path());
      continue;
    }
    out.push_back(std::move(en));
  }
  for (const auto& d : expired) fs::remove_all(d, ec);
  return out;
}

size_t PausedSessions::Sweep() const {
  std::error_code ec;
  size_t before = 0;
  for (const auto& e : fs::directory_iterator(dir_, ec))
    if (IsSessionId(e.path().filename().string())) ++before;
  return before - Scan().size();
}

size_t PausedSessions::count() const { return Scan().size(); }

uint64_t PausedSessions::RecordBytes(const std::string& id, const std::string& owner) const {
  if (!IsSessionId(id)) return 0;
  const fs::path d = fs::path(dir_) / id;
  json m = ReadMeta(d);
  if (!m.is_object() || m.value("owner", "") != owner) return 0;
  return DirBytes(d);
}


Status PausedSessions::Save(const PausedRecord& r, PausedRefusal* refusal) {
  if (!IsSessionId(r.id)) return Error{ErrorCode::kInvalidArgument, "not a session id: " + r.id};
  uint64_t bytes = 0;
  for (const auto& t : r.tars) bytes += t.size();
  if (bytes > limits_.max_record_bytes)
    return Error{ErrorCode::kInvalidArgument,
                 "pause: the session's files and state are " + std::to_string(bytes) +
                     " bytes, more than a paused session may keep (" + std::to_string(limits_.max_record_bytes) +
                     " bytes, serve --max-paused-bytes); remove files under its writable paths or large globals, "
                     "or ask the operator to raise it"};
  std::lock_guard<std::mutex> lock(mu_);
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return Error{"pause: cannot create " + dir_ + ": " + ec.message()};
  ::chmod(dir_.c_str(), 0700);
  const std::vector<Entry> all = Scan();
  const int64_t now = NowUnix();
  // Seconds until the oldest of `which` expires (a bound a wait frees), at least 1.
  auto retry = [&](auto which) {
    int64_t oldest = now;
    for (const auto& e : all)
      if (which(e)) oldest = std::min(oldest, e.paused_at_unix);
    int64_t left = oldest + static_cast<int64_t>(limits_.ttl_s) - now;
    if (refusal) refusal->retry_after_s = static_cast<uint64_t>(std::max<int64_t>(left, 1));
  };
  size_t mine = 0;
  uint64_t total = 0;
  for (const auto& e : all) {
    mine += e.owner == r.owner ? 1 : 0;
    total += e.bytes;
  }
  const std::string fix = "; resume or delete one (DELETE /v1/sessions/{id}), or wait for the oldest to expire "
                          "(serve --paused-ttl, " + std::to_string(limits_.ttl_s) + " s)";
  if (mine >= limits_.max_per_owner) {
    retry([&](const Entry& e) { return e.owner == r.owner; });
    return Error{ErrorCode::kResourceExhausted, "pause: this token has " + std::to_string(mine) +
                                                    " paused sessions, its share (serve --max-paused-per-owner " +
                                                    std::to_string(limits_.max_per_owner) + ")" + fix};
  }
  if (all.size() >= limits_.max_records) {
    retry([](const Entry&) { return true; });
    return Error{ErrorCode::kResourceExhausted, "pause: " + std::to_string(all.size()) +
                                                    " sessions are paused, the most kept (serve --max-paused " +
                                                    std::to_string(limits_.max_records) + ")" + fix};
  }
  if (total + bytes > limits_.max_total_bytes) {
    retry([](const Entry&) { return true; });
    return Error{ErrorCode::kResourceExhausted,
                 "pause: paused sessions keep " + std::to_string(total) + " bytes; this one's " +
                     std::to_string(bytes) + " would pass the bound for all of them (serve --max-paused-total-bytes " +
                     std::to_string(limits_.max_total_bytes) + ")" + fix};
  }
  const fs::path tmp = fs::path(dir_) / RandomHex(".tmp-", 8);
  fs::create_directory(tmp, ec);
  if (ec) return Error{"pause: cannot create " + tmp.string() + ": " + ec.message()};
  json meta = {{"version", 1},          {"id", r.id},
               {"owner", r.owner},      {"policy", r.policy},
               {"language", r.language}, {"setup", r.setup},
               {"idle_timeout_ms", r.idle_timeout_ms}, {"max_lifetime_ms", r.max_lifetime_ms},
               {"state_path", r.state_path}, {"values", Strings(r.values)},
               {"modules", Strings(r.modules)}, {"skipped", Strings(r.skipped)},
               {"trees", r.tars.size()}, {"paused_at", r.paused_at}, {"paused_at_unix", NowUnix()}};
  Status st = WriteNewFile((tmp / "meta.json").string(), meta.dump());
  for (size_t i = 0; st.ok() && i < r.tars.size(); ++i)
    st = WriteNewFile((tmp / ("tree-" + std::to_string(i) + ".tar")).string(), r.tars[i]);
  if (st.ok()) {
    fs::rename(tmp, fs::path(dir_) / r.id, ec);
    if (ec) st = Error{"pause: cannot rename the record into place: " + ec.message()};
  }
  if (!st.ok()) fs::remove_all(tmp, ec);
  return st;
}

Result<std::optional<PausedRecord>> PausedSessions::Load(const std::string& id, const std::string& owner) const {
  if (!IsSessionId(id)) return std::optional<PausedRecord>();
  const fs::path d = fs::path(dir_) / id;
  std::error_code ec;
  auto size = fs::file_size(d / "meta.json", ec);
  if (ec) return std::optional<PausedRecord>();
  if (size > kMaxMetaBytes) return Error{"resume: " + (d / "meta.json").string() + " is too large to be a record"};
  LSB_ASSIGN_OR_RETURN(std::string text, ReadFile((d / "meta.json").string()));
  json m = json::parse(text, nullptr, false);
  if (m.is_discarded() || !m.is_object() || m.value("version", 0) != 1 || m.value("id", "") != id)
    return Error{"resume: " + (d / "meta.json").string() + " is not a paused session's record"};
  if (m.value("owner", "") != owner) return std::optional<PausedRecord>();
  if (NowUnix() - PausedAt(d, m) >= static_cast<int64_t>(limits_.ttl_s)) {
    fs::remove_all(d, ec);  // expired: gone, as the sweep would have it
    return std::optional<PausedRecord>();
  }
  PausedRecord r;
  r.id = id;
  r.owner = owner;
  r.policy = m.value("policy", "");
  r.language = m.value("language", "");
  r.setup = m.value("setup", "");
  r.idle_timeout_ms = m.value("idle_timeout_ms", uint64_t{0});
  r.max_lifetime_ms = m.value("max_lifetime_ms", uint64_t{0});
  r.state_path = m.value("state_path", "");
  r.values = StringsAt(m, "values");
  r.modules = StringsAt(m, "modules");
  r.skipped = StringsAt(m, "skipped");
  r.paused_at = m.value("paused_at", "");
  size_t trees = m.value("trees", size_t{0});
  for (size_t i = 0; i < trees; ++i) {
    LSB_ASSIGN_OR_RETURN(std::string tar, ReadFile((d / ("tree-" + std::to_string(i) + ".tar")).string()));
    r.bytes += tar.size();
    r.tars.push_back(std::move(tar));
  }
  return std::optional<PausedRecord>(std::move(r));
}

void PausedSessions::Remove(const std::string& id) {
  if (!IsSessionId(id)) return;
  std::error_code ec;
  fs::remove_all(fs::path(dir_) / id, ec);
}

bool PausedSessions::Remove(const std::string& id, const std::string& owner) {
  if (!IsSessionId(id)) return false;
  std::lock_guard<std::mutex> lock(mu_);
  const fs::path d = fs::path(dir_) / id;
  json m = ReadMeta(d);
  if (!m.is_object() || m.value("owner", "") != owner) return false;
  std::error_code ec;
  // Renamed away first, so a resume never reads a half-removed record.
  const fs::path gone = fs::path(dir_) / RandomHex(".del-", 8);
  fs::rename(d, gone, ec);
  if (ec) return false;
  fs::remove_all(gone, ec);
  return true;
}

}  // namespace lsb::sched
