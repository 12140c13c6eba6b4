#include "image/registry_blob.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "base/io.h"
#include "base/unique_fd.h"
#include "image/registry_digest.h"

namespace lsb::image::registry {
namespace {

constexpr std::chrono::milliseconds kMaxBackoff{4000};

bool Retryable(const Error& e) { return e.code == ErrorCode::kUnavailable || e.code == ErrorCode::kTimeout; }

// "bytes 100-199/200" -> 100; -1 when malformed.
int64_t ContentRangeStart(const std::string& v) {
  if (v.rfind("bytes ", 0) != 0) return -1;
  int64_t n = 0;
  size_t i = 6;
  if (i >= v.size() || v[i] < '0' || v[i] > '9') return -1;
  for (; i < v.size() && v[i] >= '0' && v[i] <= '9'; ++i) {
    n = n * 10 + (v[i] - '0');
    if (n > (int64_t{1} << 50)) return -1;
  }
  return i < v.size() && v[i] == '-' ? n : -1;
}

uint64_t FileSize(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

Status Truncate(const std::string& path) {
  if (::truncate(path.c_str(), 0) != 0 && errno != ENOENT) return Error::FromErrno("truncate " + path);
  return OkStatus();
}

struct Attempt {
  const Descriptor& d;
  std::string partial;
  std::string host;
};

// One GET of the rest of the blob, appended to the partial file; the hasher holds what is on disk.
Status FetchRest(RegistrySession& session, HttpClient& http, const Endpoint& ep, const Attempt& a,
                 Sha256Stream& hasher, uint64_t& have, BlobTransfer& stats, const BlobProgressFn& progress,
                 const std::atomic<bool>& cancelled) {
  std::vector<std::pair<std::string, std::string>> headers;
  if (have > 0) headers.emplace_back("Range", "bytes=" + std::to_string(have) + "-");
  LSB_ASSIGN_OR_RETURN(Response resp, session.Get(http, ep, "blobs/" + a.d.digest, headers, true));
  if (resp.status == 200 && have > 0) {  // the server ignored Range: start over
    LSB_TRY(Truncate(a.partial));
    hasher.Reset();
    stats.reused -= std::min(stats.reused, have);
    have = 0;
  } else if (resp.status == 206) {
    if (ContentRangeStart(resp.Header("content-range")) != static_cast<int64_t>(have)) {
      http.DiscardBody();
      return Error{ErrorCode::kUnavailable, "registry " + a.host + " answered a resume of blob " + a.d.digest +
                                                " at the wrong offset (" + resp.Header("content-range") + ")"};
    }
  } else if (resp.status == 416 && have > 0) {  // what we hold is not a prefix it agrees with
    http.DiscardBody();
    LSB_TRY(Truncate(a.partial));
    hasher.Reset();
    have = 0;
    return Error{ErrorCode::kUnavailable, "registry " + a.host + " refused to resume blob " + a.d.digest};
  } else if (resp.status != 200) {
    auto body = http.ReadBodyString(64 * 1024);
    std::string detail = body.ok() ? RegistryErrorText(*body) : std::string();
    int s = resp.status;
    ErrorCode code = s == 404 ? ErrorCode::kNotFound
                     : s == 401 || s == 403 ? ErrorCode::kPermissionDenied
                     : (s >= 500 || s == 429 || s == 408) ? ErrorCode::kUnavailable
                                                           : ErrorCode::kUnknown;
    return Error{code, "registry " + a.host + " answered HTTP " + std::to_string(s) + " to blob " + a.d.digest +
                           (detail.empty() ? "" : " (" + detail + ")")};
  }
  UniqueFd fd(::open(a.partial.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!fd) return Error::FromErrno("open " + a.partial);
  // Never more than the manifest declared: the body limit is what is still missing.
  uint64_t limit = a.d.size - have;
  Status read = http.ReadBody(
      [&](const char* p, size_t n) -> Status {
        if (cancelled.load(std::memory_order_relaxed)) return Error::Cancelled();
        LSB_TRY(WriteAll(fd.get(), std::string_view(p, n)));
        hasher.Update(p, n);
        have += n;
        stats.downloaded += n;
        if (progress) progress(have);
        return OkStatus();
      },
      limit);
  if (!read.ok()) {
    if (read.error().code == ErrorCode::kResourceExhausted)
      return Error{ErrorCode::kInvalidArgument, "blob " + a.d.digest + " from " + a.host + ": " + read.error().message +
                                                    " (the manifest declares " + std::to_string(a.d.size) + " bytes)",
                   "digest"};
    return read.error();
  }
  if (have != a.d.size)
    return Error{ErrorCode::kUnavailable, "blob " + a.d.digest + " from " + a.host + " ended at " + std::to_string(have) +
                                              " of " + std::to_string(a.d.size) + " bytes"};
  return OkStatus();
}

}  // namespace

Result<bool> VerifiedBlobPresent(const std::string& path, const Descriptor& d) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return false;
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) == d.size) {
    Sha256Stream h;
    uint64_t size = 0;
    LSB_TRY(HashFileInto(path, h, &size));
    if (h.FinishDigest() == d.digest) return true;
  }
  if (::unlink(path.c_str()) != 0) return Error::FromErrno("remove the damaged blob " + path);
  return false;
}

Result<BlobTransfer> DownloadBlob(RegistrySession& session, HttpClient& http, size_t first_endpoint,
                                  const Descriptor& d, const std::string& blobs_dir, const PullOptions& opts,
                                  const BlobProgressFn& progress, const std::atomic<bool>& cancelled) {
  std::string hex = d.digest.substr(7);
  std::string final_path = blobs_dir + "/" + hex;
  BlobTransfer stats;
  LSB_ASSIGN_OR_RETURN(bool present, VerifiedBlobPresent(final_path, d));
  if (present) {
    stats.reused = d.size;
    return stats;
  }
  Attempt a{d, final_path + ".partial", ""};
  Sha256Stream hasher;
  uint64_t have = 0;
  if (FileSize(a.partial) > d.size) LSB_TRY(Truncate(a.partial));
  if (::access(a.partial.c_str(), F_OK) == 0) {  // a killed or broken pull left this much
    LSB_TRY(HashFileInto(a.partial, hasher, &have));
    stats.reused = have;
  }
  const auto& eps = session.endpoints();
  std::chrono::milliseconds backoff = opts.backoff;
  Error last{"no attempt"};
  for (int attempt = 0; attempt < std::max(1, opts.attempts); ++attempt) {
    if (attempt > 0) {
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, kMaxBackoff);
    }
    // The manifest's endpoint first; when it fails, the others (the registry behind a mirror).
    size_t idx = (first_endpoint + static_cast<size_t>(attempt)) % eps.size();
    if (attempt < 2) idx = first_endpoint;
    a.host = eps[idx].base.HostPort();
    Status st = have == d.size ? OkStatus()
                               : FetchRest(session, http, eps[idx], a, hasher, have, stats, progress, cancelled);
    if (st.ok()) {
      std::string got = hasher.FinishDigest();
      if (got != d.digest) {
        ::unlink(a.partial.c_str());
        return Error{ErrorCode::kInvalidArgument,
                     "blob " + d.digest + " from " + a.host + " does not match its digest (the bytes hash to " + got +
                         "); the download was deleted",
                     "digest"};
      }
      if (::rename(a.partial.c_str(), final_path.c_str()) != 0) return Error::FromErrno("rename " + a.partial);
      return stats;
    }
    last = st.error();
    if (cancelled.load() || !Retryable(last)) return last;
  }
  return last.Wrap("blob " + d.digest + " after " + std::to_string(opts.attempts) + " attempts (the " +
                   std::to_string(FileSize(a.partial)) + " bytes so far are kept in " + a.partial + " for the next pull)");
}

}  // namespace lsb::image::registry
