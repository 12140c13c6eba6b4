// Imports into the store: the steps shared by OCI layouts, `docker save` archives and pulls
// (which hand over an OCI layout). Everything runs with the store lock held.
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "base/bounded_json.h"
#include "base/time_format.h"
#include "image/layer_unpack.h"
#include "image/safe_fs.h"
#include "image/store.h"
#include "image/store_source.h"

namespace lsb::image {
namespace {

using nlohmann::json;

// Opens `rel` below `root` as a regular file, resolving symlinks only inside `root`.
Result<UniqueFd> OpenInRoot(int root, const std::string& rel) {
  open_how how {};
  how.flags = O_RDONLY | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  long fd = ::syscall(SYS_openat2, root, rel.c_str(), &how, sizeof how);
  if (fd < 0) {
    Error e = Error::FromErrno("open " + rel.substr(0, 256));
    if (errno == ENOENT) e = Error{ErrorCode::kNotFound, rel.substr(0, 256) + " is missing"};
    return e;
  }
  UniqueFd out(static_cast<int>(fd));
  struct stat st {};
  if (::fstat(out.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return Error{ErrorCode::kInvalidArgument, rel.substr(0, 256) + " is not a regular file"};
  return out;
}

Result<std::string> ReadAll(int fd, size_t max_bytes, const std::string& what) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Error::FromErrno("stat " + what);
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    return Error{ErrorCode::kResourceExhausted, what + " has " + std::to_string(st.st_size) + " bytes, more than the limit of " +
                                                    std::to_string(max_bytes)};
  std::string out(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < out.size()) {
    ssize_t r = ::pread(fd, out.data() + got, out.size() - got, static_cast<off_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return Error::FromErrno("read " + what);
    got += static_cast<size_t>(r);
  }
  return out;
}

// A native box runs the image's binaries on this kernel and CPU: an image for another os or
// architecture could only fail later, inside a box, with an obscure exec error.
Status CheckHostPlatform(const ImageConfig& config) {
  const std::string host = "linux/" + HostArchitecture();
  const std::string image = (config.os.empty() ? "?" : config.os) + "/" + (config.architecture.empty() ? "?" : config.architecture);
  if (config.os == "linux" && config.architecture == HostArchitecture()) return OkStatus();
  return Error{ErrorCode::kInvalidArgument,
               "the image is for " + image + " but this host is " + host +
                   ": a native box runs the image's binaries on the host's own kernel and CPU; pull or import "
                   "the image's " + host + " variant (a multi-platform reference picks it by itself)"};
}

}  // namespace

Result<UniqueFd> OpenRegularInRoot(int root, const std::string& rel) { return OpenInRoot(root, rel); }
Result<std::string> ReadSmallFd(int fd, size_t max_bytes, const std::string& what) { return ReadAll(fd, max_bytes, what); }

// An OCI image layout: blobs/sha256/<hex> below its root.
class Store::LayoutSource : public Store::BlobSource {
 public:
  LayoutSource(UniqueFd root, std::string path, bool ours) : root_(std::move(root)), path_(std::move(path)), ours_(ours) {}
  Result<UniqueFd> Open(const std::string& digest) override {
    auto fd = OpenInRoot(root_.get(), "blobs/sha256/" + BlobStore::Hex(digest));
    if (!fd.ok() && fd.error().IsNotFound())
      return Error{ErrorCode::kNotFound, "the image layout " + path_ + " has no blob " + digest};
    return fd;
  }
  Status AddTo(BlobStore& blobs, const Descriptor& d, int tmp_fd) override {
    if (blobs.Has(d.digest)) return OkStatus();
    if (ours_) {
      // Our own temp dir (a pull): move the verified file in instead of copying it.
      auto dir = OpenDirBeneath(root_.get(), {"blobs", "sha256"}, 2, false);
      if (dir.ok()) {
        Status st = blobs.AdoptFile(dir->get(), BlobStore::Hex(d.digest), d.digest, static_cast<int64_t>(d.size));
        if (st.ok() || st.error().sys_errno != EXDEV) return st;
      }
    }
    LSB_ASSIGN_OR_RETURN(UniqueFd fd, Open(d.digest));
    return blobs.AddFromFd(fd.get(), d.digest, static_cast<int64_t>(d.size), tmp_fd);
  }
  int root() const { return root_.get(); }

 private:
  UniqueFd root_;
  std::string path_;
  bool ours_;
};

Result<Descriptor> Store::ResolveToManifest(BlobSource& src, Descriptor d, std::string* manifest_json) {
  const size_t max_json = opts_.limits.max_json_bytes;
  for (size_t depth = 0;; ++depth) {
    if (depth > opts_.limits.max_index_depth)
      return Error{ErrorCode::kInvalidArgument, "image indexes nest deeper than " +
                                                    std::to_string(opts_.limits.max_index_depth) + " levels"};
    if (d.size > max_json)
      return Error{ErrorCode::kResourceExhausted, "manifest " + d.digest + " claims " + std::to_string(d.size) +
                                                      " bytes, more than the limit of " + std::to_string(max_json)};
    LSB_ASSIGN_OR_RETURN(UniqueFd fd, src.Open(d.digest));
    LSB_ASSIGN_OR_RETURN(std::string text, ReadAll(fd.get(), max_json, "manifest " + d.digest));
    std::string actual = "sha256:" + Hex(Sha256(text));
    if (actual != d.digest) return DigestMismatch("manifest", d.digest, actual);
    std::string type = d.media_type;
    if (type.empty() || !(IsIndexMediaType(type) || IsManifestMediaType(type))) {
      LSB_ASSIGN_OR_RETURN(type, SniffMediaType(text, max_json));
    }
    if (IsManifestMediaType(type)) {
      d.media_type = type;
      *manifest_json = std::move(text);
      return d;
    }
    if (!IsIndexMediaType(type)) return Error{ErrorCode::kInvalidArgument, "unsupported manifest media type '" + type + "'"};
    LSB_ASSIGN_OR_RETURN(Index idx, ParseIndex(text, max_json));
    LSB_ASSIGN_OR_RETURN(d, PickPlatform(idx));
  }
}

Status Store::EnsureLayer(const Descriptor& layer, const std::string& claimed_diff_id, size_t index) {
  const std::string claimed_hex = BlobStore::Hex(claimed_diff_id);
  struct stat st {};
  // Unpacked before from this very blob: the mapping was written only after the diff_id was computed.
  if (auto known = ReadFileAt(meta_blobs_fd_.get(), BlobStore::Hex(layer.digest), 128); known.ok()) {
    if (*known != claimed_diff_id)
      return Error{ErrorCode::kInvalidArgument, "layer " + std::to_string(index) + " (" + layer.digest +
                                                    ") unpacks to " + *known + " but the image config says " +
                                                    claimed_diff_id};
    if (::fstatat(layers_fd_.get(), claimed_hex.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return OkStatus();
  }
  LSB_ASSIGN_OR_RETURN(TempDir work, NewTempDir("layer"));
  if (::mkdirat(work.fd(), "root", 0755) != 0) return Error::FromErrno("mkdir layer dir");
  LSB_ASSIGN_OR_RETURN(UniqueFd dest, OpenDirBeneath(work.fd(), {"root"}, 1, false));
  LSB_ASSIGN_OR_RETURN(UniqueFd blob, blobs_.Open(layer.digest));
  auto stats = UnpackLayer(blob.get(), dest.get(), opts_.limits.unpack);
  if (!stats.ok()) return stats.error().Wrap("layer " + std::to_string(index) + " (" + layer.digest + ")");
  if (stats->diff_id != claimed_diff_id)
    return Error{ErrorCode::kInvalidArgument, "layer " + std::to_string(index) + " (" + layer.digest + "): diff_id mismatch: its content hashes to " +
                                                  stats->diff_id + " but the image config says " + claimed_diff_id +
                                                  "; the image is corrupt or was tampered with"};
  // One syncfs instead of an fsync per file: the layer is durable before its name appears.
  (void)::syncfs(dest.get());
  json meta = {{"diff_id", stats->diff_id},      {"bytes", stats->content_bytes},
               {"entries", stats->entries},      {"tar_bytes", stats->tar_bytes},
               {"whiteouts", stats->whiteouts},  {"skipped_special", stats->skipped_special},
               {"compression", CompressionName(stats->compression)}};
  LSB_TRY(WriteFileAtomic(meta_layers_fd_.get(), claimed_hex + ".json", meta.dump()));
  if (::fstatat(layers_fd_.get(), claimed_hex.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (::renameat(work.fd(), "root", layers_fd_.get(), claimed_hex.c_str()) != 0)
      return Error::FromErrno("store layer " + claimed_diff_id);
    (void)::fsync(layers_fd_.get());
  }
  return WriteFileAtomic(meta_blobs_fd_.get(), BlobStore::Hex(layer.digest), claimed_diff_id);
}

Status Store::Commit(const StoredImage& entry) {
  LSB_ASSIGN_OR_RETURN(auto entries, ReadIndex());
  std::vector<StoredImage> next;
  for (auto& e : entries)
    if (e.reference != entry.reference) next.push_back(std::move(e));
  next.push_back(entry);
  return WriteIndex(next);
}

Result<ImageRoot> Store::ImportFrom(BlobSource& src, const Descriptor& top, const ImageReference& name) {
  const size_t max_json = opts_.limits.max_json_bytes;
  (void)CleanStaleTemp(Path("tmp"), /*keep_resumable=*/true);
  LSB_ASSIGN_OR_RETURN(TempDir work, NewTempDir("import"));
  std::string manifest_json;
  LSB_ASSIGN_OR_RETURN(Descriptor md, ResolveToManifest(src, top, &manifest_json));
  LSB_ASSIGN_OR_RETURN(Manifest m, ParseManifest(manifest_json, max_json));
  if (m.layers.size() > opts_.limits.max_layers)
    return Error{ErrorCode::kResourceExhausted, "the image has " + std::to_string(m.layers.size()) +
                                                    " layers, more than the limit of " + std::to_string(opts_.limits.max_layers)};
  if (m.config.size > max_json)
    return Error{ErrorCode::kResourceExhausted, "the image config claims " + std::to_string(m.config.size) + " bytes"};
  LSB_TRY(src.AddTo(blobs_, m.config, work.fd()));
  LSB_ASSIGN_OR_RETURN(std::string config_json, blobs_.ReadVerified(m.config.digest, max_json));
  LSB_ASSIGN_OR_RETURN(Config c, ParseConfig(config_json, max_json));
  LSB_TRY(CheckHostPlatform(c.image));
  if (c.diff_ids.size() != m.layers.size())
    return Error{ErrorCode::kInvalidArgument, "the image config lists " + std::to_string(c.diff_ids.size()) +
                                                  " layers (rootfs.diff_ids) but the manifest " + std::to_string(m.layers.size())};
  for (size_t i = 0; i < m.layers.size(); ++i) {
    LSB_TRY(src.AddTo(blobs_, m.layers[i], work.fd()));
    LSB_TRY(EnsureLayer(m.layers[i], c.diff_ids[i], i));
  }
  LSB_TRY(blobs_.AddBytes(manifest_json, md.digest, work.fd()));
  StoredImage entry;
  entry.reference = name.Canonical();
  entry.manifest_digest = md.digest;
  entry.media_type = md.media_type;
  entry.manifest_size = manifest_json.size();
  entry.os = c.image.os;
  entry.architecture = c.image.architecture;
  entry.imported = Rfc3339(std::chrono::system_clock::now());
  LSB_TRY(Commit(entry));
  if (opts_.max_bytes > 0) LSB_TRY(EnforceBound(entry.reference));
  return RootOf(entry, nullptr);
}

Result<ImageRoot> Store::ImportOciLayout(const std::string& layout_dir, const ImageReference& name) {
  auto fail = [&](const Error& e) { return e.Wrap("import " + layout_dir); };
  auto root = OpenDir(layout_dir);
  if (!root.ok()) return fail(root.error());
  {
    auto fd = OpenInRoot(root->get(), "oci-layout");
    if (!fd.ok()) return fail(Error{ErrorCode::kInvalidArgument, "not an OCI image layout (no oci-layout file)"});
  }
  auto index_fd = OpenInRoot(root->get(), "index.json");
  if (!index_fd.ok()) return fail(index_fd.error());
  auto index_json = ReadAll(index_fd->get(), opts_.limits.max_json_bytes, "index.json");
  if (!index_json.ok()) return fail(index_json.error());
  auto idx = ParseIndex(*index_json, opts_.limits.max_json_bytes);
  if (!idx.ok()) return fail(idx.error());
  // The entry named like the image (skopeo writes the tag, others the full reference), else the only one.
  const Descriptor* pick = nullptr;
  for (const auto& d : idx->manifests)
    if (!d.ref_name.empty() && (d.ref_name == name.tag || d.ref_name == name.Canonical() || d.ref_name == name.Familiar()))
      pick = &d;
  if (!pick && idx->manifests.size() == 1) pick = &idx->manifests[0];
  if (!pick) {
    std::string names;
    for (const auto& d : idx->manifests) names += (names.empty() ? "" : ", ") + (d.ref_name.empty() ? d.digest : d.ref_name);
    return fail(Error{ErrorCode::kNotFound, "the layout has no image named " + name.Familiar() + " (it has: " +
                                                (names.empty() ? "nothing" : names) + ")"});
  }
  std::string tmp_root = Path("tmp") + "/";
  bool ours = layout_dir.rfind(tmp_root, 0) == 0 && layout_dir.find("/../") == std::string::npos;
  LayoutSource src(std::move(root).value(), layout_dir, ours);
  Descriptor top = *pick;
  LSB_ASSIGN_OR_RETURN(FileLock lock, LockForWrite());
  auto r = ImportFrom(src, top, name);
  if (!r.ok()) return fail(r.error());
  return r;
}

}  // namespace lsb::image
