#include "monitor/audit_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "base/io.h"
#include "base/state_dir.h"

namespace lsb::monitor {
namespace {

Result<UniqueFd> OpenAppend(const std::string& path, uint64_t* size) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640));
  if (!fd) return Error::FromErrno("audit log: open " + path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Error::FromErrno("audit log: stat " + path);
  *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

// Syncs the directory so a rename or a new file survives a crash too.
void SyncDir(const std::string& path) {
  size_t slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  UniqueFd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (d) (void)::fsync(d.get());
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

std::string DefaultAuditLogPath() {
  if (std::string p = Env("LLM_SANDBOX_AUDIT_LOG"); !p.empty()) return p;
  std::string dir = DefaultStateDir();
  return dir.empty() ? "" : dir + "/audit.jsonl";
}

bool IsAuditLogOff(const std::string& value) { return value == "none" || value == "off"; }

Status MakeParentDirs(const std::string& path) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    std::string dir = path.substr(0, slash);
    // Searchable, not listable: the state directory also holds the image store boxes read from.
    if (::mkdir(dir.c_str(), kStateDirMode) != 0 && errno != EEXIST) return Error::FromErrno("audit log: mkdir " + dir);
  }
  return OkStatus();
}

Result<std::unique_ptr<AuditLog>> AuditLog::Open(AuditLogOptions opts) {
  if (opts.path.empty()) return Error{"audit log: no path given"};
  std::unique_ptr<AuditLog> log(new AuditLog(std::move(opts)));
  LSB_ASSIGN_OR_RETURN(log->fd_, OpenAppend(log->opts_.path, &log->size_));
  SyncDir(log->opts_.path);
  return log;
}

Status AuditLog::Rotate() {
  const std::string& p = opts_.path;
  if (opts_.keep <= 0) {
    if (::truncate(p.c_str(), 0) != 0) return Error::FromErrno("audit log: truncate " + p);
  } else {
    (void)::unlink((p + "." + std::to_string(opts_.keep)).c_str());
    for (int i = opts_.keep - 1; i >= 1; --i)
      (void)::rename((p + "." + std::to_string(i)).c_str(), (p + "." + std::to_string(i + 1)).c_str());
    if (::rename(p.c_str(), (p + ".1").c_str()) != 0) return Error::FromErrno("audit log: rotate " + p);
  }
  LSB_ASSIGN_OR_RETURN(fd_, OpenAppend(p, &size_));
  SyncDir(p);
  return OkStatus();
}

Status AuditLog::WriteAndSync(const std::string& lines) {
  if (size_ > 0 && size_ + lines.size() > opts_.max_bytes) LSB_TRY(Rotate());
  // Whole lines in one write; O_APPEND keeps them contiguous even if another process appends.
  LSB_TRY(WriteAll(fd_.get(), lines));
  size_ += lines.size();
  if (opts_.sync && ::fdatasync(fd_.get()) != 0) return Error::FromErrno("audit log: fdatasync " + opts_.path);
  return OkStatus();
}

Status AuditLog::AppendAll(const std::vector<nlohmann::json>& records) {
  if (records.empty()) return OkStatus();
  std::string lines;
  for (const auto& r : records) {
    lines += r.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    lines.push_back('\n');
  }
  std::unique_lock<std::mutex> lock(mu_);
  pending_ += lines;
  appended_ += records.size();
  const uint64_t mine = appended_;
  while (durable_ < mine) {
    if (flushing_) {
      cv_.wait(lock);
      continue;
    }
    // Leader: take everything pending (ours included) and make it durable in one go.
    flushing_ = true;
    std::string batch;
    batch.swap(pending_);
    const uint64_t upto = appended_;
    lock.unlock();
    Status st = WriteAndSync(batch);
    lock.lock();
    flushing_ = false;
    durable_ = upto;
    last_status_ = st;
    if (!st.ok()) {
      ++errors_;
      std::fprintf(stderr, "serve: %s\n", st.error().message.c_str());
    }
    cv_.notify_all();
    if (!st.ok()) return st;
  }
  return last_status_;
}

uint64_t AuditLog::records() const {
  std::lock_guard<std::mutex> lock(mu_);
  return durable_;
}

uint64_t AuditLog::errors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return errors_;
}

}  // namespace lsb::monitor
