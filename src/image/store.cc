#include "image/store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "base/bounded_json.h"
#include "base/sha256.h"
#include "base/state_dir.h"
#include "image/safe_fs.h"
#include "image/store_lease.h"
#include "policy/units.h"

namespace lsb::image {
namespace {

using nlohmann::json;

constexpr const char* kOciLayoutFile = "{\"imageLayoutVersion\":\"1.0.0\"}";
constexpr const char* kImportedAnnotation = "io.llm-sandbox.imported";

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

std::string DefaultStoreDir() {
  if (std::string d = Env("LLM_SANDBOX_IMAGE_STORE"); !d.empty()) return d;
  std::string state = DefaultStateDir();
  return state.empty() ? "" : state + "/images";
}

Result<uint64_t> DefaultStoreMaxBytes() {
  std::string v = Env("LLM_SANDBOX_IMAGE_STORE_MAX");
  if (v.empty()) return kDefaultStoreMaxBytes;
  auto bytes = units::ParseBytes(v);
  if (!bytes.ok())
    return Error::InvalidArgument("LLM_SANDBOX_IMAGE_STORE_MAX", "LLM_SANDBOX_IMAGE_STORE_MAX='" + v +
                                                                     "': " + bytes.error().message +
                                                                     " (a size such as 20G or 500M; 0 for no bound)");
  return *bytes;
}

Result<uint64_t> StoreMaxBytes(const std::string& flag_value) {
  if (flag_value.empty()) return DefaultStoreMaxBytes();
  auto bytes = units::ParseBytes(flag_value);
  if (!bytes.ok())
    return Error::InvalidArgument("--max-store-bytes", "--max-store-bytes '" + flag_value + "': " + bytes.error().message +
                                                           " (a size such as 20G or 500M; 0 for no bound)");
  return *bytes;
}

Result<std::unique_ptr<Store>> Store::Open(StoreOptions options) {
  if (options.root.empty())
    return Error::InvalidArgument("store", "no image store directory: set LLM_SANDBOX_IMAGE_STORE or pass --store DIR");
  while (options.root.size() > 1 && options.root.back() == '/') options.root.pop_back();
  std::unique_ptr<Store> s(new Store(std::move(options)));
  LSB_TRY(s->Init());
  return s;
}

Status Store::Init() {
  auto wrap = [this](const Error& e) { return e.Wrap("image store " + opts_.root); };
  // Native boxes open layers under their own unprivileged uids: every directory down to them must
  // be searchable by others, the state directory above the default store too (state_dir.h).
  if (!DefaultStateDir().empty() && opts_.root == DefaultStateDir() + "/images") LSB_TRY(KeepStateDirSearchable());
  for (const char* d : {"", "/blobs/sha256", "/layers/sha256", "/meta/layers", "/meta/blobs", "/meta/used", "/meta/inuse", "/tmp"}) {
    Status st = MakeDirs(opts_.root + d);
    if (!st.ok()) return wrap(st.error());
  }
  auto open = [&](const char* rel, UniqueFd* fd) -> Status {
    auto r = OpenDir(Path(rel));
    if (!r.ok()) return wrap(r.error());
    *fd = std::move(r).value();
    return OkStatus();
  };
  LSB_TRY(open(".", &root_fd_));
  UniqueFd blobs;
  LSB_TRY(open("blobs/sha256", &blobs));
  blobs_ = BlobStore(std::move(blobs), Path("blobs/sha256"));
  LSB_TRY(open("layers/sha256", &layers_fd_));
  LSB_TRY(open("meta/layers", &meta_layers_fd_));
  LSB_TRY(open("meta/blobs", &meta_blobs_fd_));
  LSB_TRY(open("meta/used", &meta_used_fd_));
  LSB_TRY(open(kInUseDir, &meta_inuse_fd_));
  struct stat st {};
  if (::fstatat(root_fd_.get(), "oci-layout", &st, 0) != 0) {
    LSB_ASSIGN_OR_RETURN(FileLock lock, LockForWrite());
    if (::fstatat(root_fd_.get(), "oci-layout", &st, 0) != 0) {
      LSB_TRY(WriteFileAtomic(root_fd_.get(), "index.json", "{\"schemaVersion\":2,\"manifests\":[]}"));
      LSB_TRY(WriteFileAtomic(root_fd_.get(), "oci-layout", kOciLayoutFile));
    }
  }
  return OkStatus();
}

Result<FileLock> Store::LockForWrite() const { return FileLock::Exclusive(Path("lock")); }

Result<TempDir> Store::NewTempDir(std::string_view purpose) const { return TempDir::Create(Path("tmp"), purpose); }

Result<TempDir> Store::PullDirFor(const ImageReference& ref) const {
  // Keyed by the reference pulled (a tag may move, but its blobs are verified by digest anyway).
  std::string key = Hex(Sha256(ref.Canonical())).substr(0, 24);
  return TempDir::Named(Path("tmp"), std::string(kResumablePullPrefix) + key);
}


Result<std::vector<StoredImage>> Store::ReadIndex() const {
  LSB_ASSIGN_OR_RETURN(std::string text, ReadFileAt(root_fd_.get(), "index.json", opts_.limits.max_json_bytes));
  JsonLimits limits;
  limits.max_bytes = opts_.limits.max_json_bytes;
  ParsedJson parsed = ParseBoundedJson(text, limits);
  if (!parsed.ok() || !parsed->is_object())
    return Error{ErrorCode::kIo, "image store " + opts_.root + ": index.json is not valid JSON; remove it to reset the store"};
  std::vector<StoredImage> out;
  auto ms = parsed->find("manifests");
  if (ms == parsed->end() || !ms->is_array()) return out;
  for (const auto& m : *ms) {
    if (!m.is_object()) continue;
    StoredImage e;
    e.media_type = JsonStringOr(m, "mediaType", kOciManifest);
    e.manifest_digest = JsonStringOr(m, "digest", "");
    if (auto sz = m.find("size"); sz != m.end() && sz->is_number_unsigned()) e.manifest_size = sz->get<uint64_t>();
    if (auto p = m.find("platform"); p != m.end() && p->is_object()) {
      e.os = JsonStringOr(*p, "os", "");
      e.architecture = JsonStringOr(*p, "architecture", "");
    }
    if (auto a = m.find("annotations"); a != m.end() && a->is_object()) {
      e.reference = JsonStringOr(*a, kRefNameAnnotation, "");
      e.imported = JsonStringOr(*a, kImportedAnnotation, "");
    }
    if (!e.reference.empty() && IsSha256Digest(e.manifest_digest)) out.push_back(std::move(e));
  }
  return out;
}

Status Store::WriteIndex(const std::vector<StoredImage>& entries) {
  json ms = json::array();
  for (const auto& e : entries) {
    json d = {{"mediaType", e.media_type}, {"digest", e.manifest_digest}, {"size", e.manifest_size}};
    if (!e.architecture.empty()) d["platform"] = {{"os", e.os}, {"architecture", e.architecture}};
    d["annotations"] = {{kRefNameAnnotation, e.reference}, {kImportedAnnotation, e.imported}};
    ms.push_back(std::move(d));
  }
  json idx = {{"schemaVersion", 2}, {"mediaType", kOciIndex}, {"manifests", std::move(ms)}};
  return WriteFileAtomic(root_fd_.get(), "index.json", idx.dump(2) + "\n");
}

Result<const StoredImage*> Store::Find(const std::vector<StoredImage>& entries, const ImageReference& ref) const {
  const std::string canonical = ref.Canonical();
  for (const auto& e : entries)
    if (e.reference == canonical) return &e;
  // name@digest without a tag: any entry of that repository with that manifest.
  if (!ref.digest.empty()) {
    for (const auto& e : entries) {
      auto stored = ParseImageReference(e.reference);
      if (e.manifest_digest == ref.digest && stored.ok() && stored->registry == ref.registry &&
          stored->repository == ref.repository)
        return &e;
    }
  }
  return Error{ErrorCode::kNotFound, "image " + ref.Familiar() + " is not in the image store " + opts_.root +
                                          " (llm-sandbox image pull or image import adds it; image ls lists it)"};
}

Result<ImageRoot> Store::RootOf(const StoredImage& e, ImageInfo* info) const {
  const size_t max_json = opts_.limits.max_json_bytes;
  auto broken = [&](const Error& err) {
    return err.Wrap("image " + e.reference + " in the store is damaged (re-import it)");
  };
  auto manifest_json = blobs_.ReadVerified(e.manifest_digest, max_json);
  if (!manifest_json.ok()) return broken(manifest_json.error());
  LSB_ASSIGN_OR_RETURN(Manifest m, ParseManifest(*manifest_json, max_json));
  auto config_json = blobs_.ReadVerified(m.config.digest, max_json);
  if (!config_json.ok()) return broken(config_json.error());
  LSB_ASSIGN_OR_RETURN(Config c, ParseConfig(*config_json, max_json));
  if (c.diff_ids.size() != m.layers.size()) return broken(Error{"its config and manifest disagree on the layer count"});
  ImageRoot root;
  root.reference = e.reference;
  root.manifest_digest = e.manifest_digest;
  root.config = c.image;
  for (size_t i = 0; i < m.layers.size(); ++i) {
    std::string hex = BlobStore::Hex(c.diff_ids[i]);
    struct stat st {};
    if (::fstatat(layers_fd_.get(), hex.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
      return broken(Error{ErrorCode::kNotFound, "layer " + c.diff_ids[i] + " is missing"});
    root.layers.push_back(Path("layers/sha256/" + hex));
    if (info) {
      LayerInfo l;
      l.blob_digest = m.layers[i].digest;
      l.diff_id = c.diff_ids[i];
      l.media_type = m.layers[i].media_type;
      l.compressed_bytes = m.layers[i].size;
      l.dir = root.layers.back();
      if (auto meta = ReadFileAt(meta_layers_fd_.get(), hex + ".json", 4096); meta.ok()) {
        ParsedJson j = ParseBoundedJson(*meta);
        if (j.ok() && j->is_object()) {
          l.unpacked_bytes = j->value("bytes", uint64_t{0});
          l.entries = j->value("entries", uint64_t{0});
        }
      }
      info->compressed_bytes += l.compressed_bytes;
      info->unpacked_bytes += l.unpacked_bytes;
      info->layers.push_back(std::move(l));
    }
  }
  if (info) {
    info->entry = e;
    info->config_digest = m.config.digest;
    info->created = c.created;
    info->config = c.image;
  }
  return root;
}

Result<ImageRoot> Store::Resolve(const ImageReference& ref) const {
  LSB_ASSIGN_OR_RETURN(auto entries, ReadIndex());
  LSB_ASSIGN_OR_RETURN(const StoredImage* e, Find(entries, ref));
  LSB_ASSIGN_OR_RETURN(ImageRoot root, RootOf(*e, nullptr));
  // Last use, for the cache bound's eviction order; best effort (a reader may not own the store).
  std::string hex = BlobStore::Hex(e->manifest_digest);
  UniqueFd stamp(::openat(meta_used_fd_.get(), hex.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (stamp) (void)::futimens(stamp.get(), nullptr);
  return root;
}

Result<std::vector<StoredImage>> Store::List() const { return ReadIndex(); }

Result<ImageInfo> Store::Inspect(const ImageReference& ref) const {
  LSB_ASSIGN_OR_RETURN(auto entries, ReadIndex());
  LSB_ASSIGN_OR_RETURN(const StoredImage* e, Find(entries, ref));
  ImageInfo info;
  LSB_ASSIGN_OR_RETURN(ImageRoot root, RootOf(*e, &info));
  (void)root;
  return info;
}

}  // namespace lsb::image
