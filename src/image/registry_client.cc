#include "image/registry_client.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/io.h"
#include "base/unique_fd.h"
#include "image/registry_blob.h"
#include "image/registry_digest.h"
#include "image/registry_session.h"

namespace lsb::image {
namespace {

using registry::Descriptor;
using registry::Endpoint;
using registry::HttpClient;
using registry::Manifest;
using registry::ManifestKind;
using registry::RegistrySession;

Status MakeDirs(const std::string& path) {
  std::string cur;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || (path[i] == '/' && i > 0)) {
      cur = path.substr(0, i);
      if (::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) return Error::FromErrno("create " + cur);
    }
  }
  return OkStatus();
}

// Writes `data` to `path` through a temporary and a rename: readers see the old file or the new.
Status WriteAtomically(const std::string& path, std::string_view data) {
  std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  {
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd) return Error::FromErrno("create " + tmp);
    Status st = WriteAll(fd.get(), data);
    if (!st.ok()) {
      ::unlink(tmp.c_str());
      return st.error().Wrap(tmp);
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Error::FromErrno("rename " + tmp, err);
  }
  return OkStatus();
}

struct FetchedManifest {
  std::string body;
  std::string digest;
  Manifest parsed;
};

Error ManifestHttpError(const RegistrySession& s, const Endpoint& ep, const std::string& reference, int status,
                        const std::string& detail) {
  std::string image = s.ref().Familiar();
  std::string where = ep.base.HostPort();
  std::string why = detail.empty() ? "" : " (" + detail + ")";
  if (status == 404)
    return Error{ErrorCode::kNotFound, "image " + image + " not found: registry " + where + " has no manifest " +
                                           reference + " in repository " + s.ref().repository + why};
  if (status == 401 || status == 403)
    return Error{ErrorCode::kPermissionDenied, "registry " + where + " refused the pull of " + image + " (HTTP " +
                                                   std::to_string(status) + ", tried " + ep.auth->Tried() + ")" + why +
                                                   "; " + ep.auth->HowToGiveCredentials()};
  ErrorCode code = (status >= 500 || status == 429) ? ErrorCode::kUnavailable : ErrorCode::kUnknown;
  return Error{code, "registry " + where + " answered HTTP " + std::to_string(status) + " to manifest " + reference +
                         " of " + image + why};
}

// GETs one manifest, bounded and verified: by digest it must hash to it; by tag the registry's
// Docker-Content-Digest, when sent, must be what the bytes hash to.
Result<FetchedManifest> FetchManifestOnce(RegistrySession& s, HttpClient& http, const Endpoint& ep,
                                          const std::string& reference, const Descriptor* expected) {
  LSB_ASSIGN_OR_RETURN(registry::Response resp,
                       s.Get(http, ep, "manifests/" + reference, {{"Accept", registry::ManifestAccept()}}, false));
  if (resp.status != 200) {
    auto body = http.ReadBodyString(64 * 1024);
    return ManifestHttpError(s, ep, reference, resp.status, body.ok() ? registry::RegistryErrorText(*body) : "");
  }
  uint64_t limit = expected != nullptr ? std::min<uint64_t>(expected->size, registry::kMaxManifestBytes)
                                       : registry::kMaxManifestBytes;
  auto body = http.ReadBodyString(limit);
  if (!body.ok()) {
    if (body.error().code == ErrorCode::kResourceExhausted)
      return Error::InvalidArgument("manifest", "manifest " + reference + " of " + s.ref().Familiar() + ": " +
                                                    body.error().message);
    return body.error();
  }
  FetchedManifest m;
  m.body = std::move(*body);
  m.digest = registry::Sha256Digest(m.body);
  bool by_digest = IsSha256Digest(reference);
  if (by_digest && m.digest != reference)
    return Error::InvalidArgument("digest", "registry " + ep.base.HostPort() + " served manifest " + reference +
                                                " with bytes that hash to " + m.digest + "; refused");
  std::string header = resp.Header("docker-content-digest");
  if (!by_digest && !header.empty() && header != m.digest)
    return Error::InvalidArgument("digest", "registry " + ep.base.HostPort() + " says manifest " + reference + " is " +
                                                header + " but its bytes hash to " + m.digest + "; refused");
  if (expected != nullptr && m.body.size() != expected->size)
    return Error::InvalidArgument("manifest", "manifest " + reference + " is " + std::to_string(m.body.size()) +
                                                  " bytes; its index says " + std::to_string(expected->size));
  auto parsed = registry::ParseManifest(m.body, resp.Header("content-type"));
  if (!parsed.ok()) return parsed.error().Wrap("manifest " + reference + " of " + s.ref().Familiar());
  m.parsed = std::move(*parsed);
  return m;
}

Result<FetchedManifest> FetchManifest(RegistrySession& s, HttpClient& http, const Endpoint& ep,
                                      const std::string& reference, const Descriptor* expected,
                                      const PullOptions& opts) {
  std::chrono::milliseconds backoff = opts.backoff;
  for (int attempt = 0;; ++attempt) {
    auto m = FetchManifestOnce(s, http, ep, reference, expected);
    if (m.ok() || m.error().code != ErrorCode::kUnavailable || attempt + 1 >= std::max(1, opts.attempts)) return m;
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(4000));
  }
}

// The image manifest for this host: an index is narrowed to the host's platform, at most
// kMaxIndexDepth levels deep.
Result<FetchedManifest> ResolveImageManifest(RegistrySession& s, HttpClient& http, const Endpoint& ep,
                                             const PullOptions& opts, PulledImage& out) {
  LSB_ASSIGN_OR_RETURN(FetchedManifest m, FetchManifest(s, http, ep, s.ref().ManifestReference(), nullptr, opts));
  for (int depth = 0; m.parsed.kind == ManifestKind::kIndex; ++depth) {
    if (depth >= registry::kMaxIndexDepth)
      return Error::InvalidArgument("manifest", "image " + s.ref().Familiar() + " nests indexes more than " +
                                                    std::to_string(registry::kMaxIndexDepth) + " deep; refused");
    if (out.index_digest.empty()) out.index_digest = m.digest;
    auto chosen = registry::SelectPlatform(m.parsed, registry::HostPlatform());
    if (!chosen.ok()) return chosen.error().Wrap("image " + s.ref().Familiar());
    out.platform = chosen->platform;
    Descriptor d = *chosen;
    LSB_ASSIGN_OR_RETURN(m, FetchManifest(s, http, ep, d.digest, &d, opts));
  }
  return m;
}

struct Job {
  Descriptor d;
  int progress_id;
  bool layer = true;  // false: the config
};

// Downloads every job with `opts.jobs` threads, each with its own connections; the first failure
// stops the others and is the result.
Status DownloadAll(RegistrySession& s, size_t endpoint, const std::vector<Job>& jobs, const std::string& blobs_dir,
                   const PullOptions& opts, registry::PullProgress& progress, PulledImage& out) {
  std::atomic<size_t> next{0};
  std::atomic<bool> cancelled{false};
  std::mutex mu;
  std::optional<Error> first_error;
  // The display and the caller's listener (PullOptions::on_blob) see the same steps.
  auto report = [&](const Job& job, uint64_t done, const char* state, bool finished) {
    if (finished) progress.Finish(job.progress_id, state);
    else progress.Set(job.progress_id, done, state);
    if (opts.on_blob) opts.on_blob({job.d.digest, job.layer, finished ? job.d.size : done, job.d.size, state});
  };
  auto worker = [&] {
    auto http = s.NewClient();
    for (size_t i; (i = next.fetch_add(1)) < jobs.size() && !cancelled.load();) {
      const Job& job = jobs[i];
      report(job, 0, "downloading", false);
      auto r = registry::DownloadBlob(
          s, *http, endpoint, job.d, blobs_dir, opts,
          [&](uint64_t have) { report(job, have, "downloading", false); }, cancelled);
      std::lock_guard<std::mutex> lock(mu);
      if (!r.ok()) {
        report(job, 0, "failed", true);
        if (!first_error && !r.error().IsCancelled()) first_error = r.error();
        cancelled = true;
        return;
      }
      out.bytes_downloaded += r->downloaded;
      out.bytes_reused += r->reused;
      report(job, job.d.size, r->downloaded == 0 ? "already there" : "done", true);
    }
  };
  int n = std::clamp(opts.jobs, 1, kMaxPullJobs);
  n = std::min<int>(n, static_cast<int>(jobs.size()));
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  if (first_error) return *first_error;
  if (cancelled.load()) return Error::Cancelled();
  return OkStatus();
}

// index.json: the one image, with its reference as Docker/containerd annotate it.
std::string LayoutIndex(const ImageReference& ref, const PulledImage& img, uint64_t manifest_size) {
  nlohmann::json desc = {{"mediaType", img.manifest_media_type},
                         {"digest", img.manifest_digest},
                         {"size", manifest_size}};
  nlohmann::json ann = {{"io.containerd.image.name", ref.Canonical()},
                        {"org.opencontainers.image.ref.name", ref.tag.empty() ? ref.digest : ref.tag}};
  if (!img.index_digest.empty()) ann["io.llm-sandbox.image.index.digest"] = img.index_digest;
  desc["annotations"] = ann;
  if (!img.platform.architecture.empty()) {
    desc["platform"] = {{"os", img.platform.os}, {"architecture", img.platform.architecture}};
    if (!img.platform.variant.empty()) desc["platform"]["variant"] = img.platform.variant;
  }
  nlohmann::json index = {{"schemaVersion", 2},
                          {"mediaType", std::string(registry::kOciIndex)},
                          {"manifests", nlohmann::json::array({desc})}};
  return index.dump(2) + "\n";
}

std::string ShortDigest(const std::string& digest) { return digest.substr(7, 12); }

// A blob the caller already has, linked into the layout so DownloadBlob finds it present (and
// verifies it there). Best effort: without the link (another file system, gone) it is downloaded.
void LinkReusableBlob(const std::string& from_dir, const std::string& blobs_dir, const Descriptor& d) {
  std::string hex = d.digest.substr(7);
  (void)::link((from_dir + "/" + hex).c_str(), (blobs_dir + "/" + hex).c_str());
}

}  // namespace

Result<PulledImage> PullToLayout(const ImageReference& ref, const std::string& layout_dir, const PullOptions& opts) {
  if (layout_dir.empty()) return Error::InvalidArgument("layout", "no layout directory given (--layout DIR)");
  if (opts.jobs < 1 || opts.jobs > kMaxPullJobs)
    return Error::InvalidArgument("jobs", "concurrent downloads must be 1.." + std::to_string(kMaxPullJobs) + ", not " +
                                              std::to_string(opts.jobs));
  std::string blobs_dir = layout_dir + "/blobs/sha256";
  LSB_TRY(MakeDirs(blobs_dir));
  LSB_ASSIGN_OR_RETURN(auto session, RegistrySession::Open(ref, opts));
  PulledImage out;
  out.reference = ref.Canonical();
  auto http = session->NewClient();

  // The manifest from the first endpoint that has it: mirrors first, then the registry.
  std::optional<FetchedManifest> manifest;
  size_t endpoint = 0;
  std::string mirror_errors;
  const auto& eps = session->endpoints();
  for (size_t i = 0; i < eps.size() && !manifest; ++i) {
    PulledImage attempt = out;
    auto m = ResolveImageManifest(*session, *http, eps[i], opts, attempt);
    if (m.ok()) {
      manifest = std::move(*m);
      endpoint = i;
      out = std::move(attempt);
      break;
    }
    if (!eps[i].mirror)
      return mirror_errors.empty() ? m.error() : m.error().Wrap("after the mirrors failed (" + mirror_errors + ")");
    mirror_errors += (mirror_errors.empty() ? "" : "; ") + eps[i].base.Origin() + ": " + m.error().message;
  }
  out.registry_used = eps[endpoint].base.Origin();
  out.manifest_digest = manifest->digest;
  out.manifest_media_type = manifest->parsed.media_type;
  out.config = manifest->parsed.config;
  out.layers = manifest->parsed.layers;
  Descriptor manifest_desc{out.manifest_media_type, manifest->digest, manifest->body.size(), {}};
  LSB_ASSIGN_OR_RETURN(bool have_manifest,
                       registry::VerifiedBlobPresent(blobs_dir + "/" + manifest->digest.substr(7), manifest_desc));
  if (!have_manifest) LSB_TRY(WriteAtomically(blobs_dir + "/" + manifest->digest.substr(7), manifest->body));

  registry::PullProgress progress(opts.progress, opts.progress_out);
  std::vector<Job> jobs;
  jobs.push_back({out.config, progress.Add("config " + ShortDigest(out.config.digest), out.config.size), false});
  for (const auto& l : out.layers) {
    bool dup = false;  // an image may list one layer twice; it is one blob
    for (const auto& j : jobs) dup = dup || j.d.digest == l.digest;
    if (!dup) jobs.push_back({l, progress.Add("layer " + ShortDigest(l.digest), l.size), true});
  }
  if (!opts.reuse_blobs_dir.empty())
    for (const auto& j : jobs) LinkReusableBlob(opts.reuse_blobs_dir, blobs_dir, j.d);
  Status st = DownloadAll(*session, endpoint, jobs, blobs_dir, opts, progress, out);
  progress.Close();
  if (!st.ok()) return st.error().Wrap("pull " + ref.Familiar());

  // Last, and each atomically: a layout with an index.json is a complete one.
  LSB_TRY(WriteAtomically(layout_dir + "/oci-layout", "{\"imageLayoutVersion\":\"1.0.0\"}\n"));
  LSB_TRY(WriteAtomically(layout_dir + "/index.json", LayoutIndex(ref, out, manifest->body.size())));
  return out;
}

}  // namespace lsb::image
