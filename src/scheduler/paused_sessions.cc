#include "scheduler/paused_sessions.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/io.h"
#include "base/random_id.h"
#include "base/unique_fd.h"
#include "scheduler/session_manager.h"

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
}  // namespace

bool IsSessionId(const std::string& id) {
  if (id.size() < 20 || id.compare(0, 4, "ses-") != 0) return false;
  for (size_t i = 4; i < 20; ++i)
    if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f'))) return false;
  if (id.size() == 20) return true;
  // "-<node>" (serve's --node-name rule: never '/' or '.').
  return id[20] == '-' && IsNodeName(id.substr(21));
}

size_t PausedSessions::count() const {
  std::error_code ec;
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir_, ec))
    if (IsSessionId(e.path().filename().string())) ++n;
  return n;
}

Status PausedSessions::Save(const PausedRecord& r) {
  if (!IsSessionId(r.id)) return Error{ErrorCode::kInvalidArgument, "not a session id: " + r.id};
  std::lock_guard<std::mutex> lock(mu_);
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return Error{"pause: cannot create " + dir_ + ": " + ec.message()};
  ::chmod(dir_.c_str(), 0700);
  if (count() >= max_records_)
    return Error{ErrorCode::kResourceExhausted, "pause: " + std::to_string(max_records_) +
                                                    " sessions are paused, the most kept (serve --max-paused); "
                                                    "resume or delete one"};
  const fs::path tmp = fs::path(dir_) / RandomHex(".tmp-", 8);
  fs::create_directory(tmp, ec);
  if (ec) return Error{"pause: cannot create " + tmp.string() + ": " + ec.message()};
  json meta = {{"version", 1},          {"id", r.id},
               {"owner", r.owner},      {"policy", r.policy},
               {"language", r.language}, {"setup", r.setup},
               {"idle_timeout_ms", r.idle_timeout_ms}, {"max_lifetime_ms", r.max_lifetime_ms},
               {"state_path", r.state_path}, {"values", Strings(r.values)},
               {"modules", Strings(r.modules)}, {"skipped", Strings(r.skipped)},
               {"trees", r.tars.size()}, {"paused_at", r.paused_at}};
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

}  // namespace lsb::sched
