// `docker save` archives: a tar holding manifest.json ([{Config, RepoTags, Layers}]) and the files
// it names. The classic layout has <id>/layer.tar and <config hex>.json (and may symlink a repeated
// layer to its first copy); Docker 25+ writes an OCI layout whose blobs manifest.json names. Both
// are read through manifest.json: the archive is unpacked with the layer unpacker's rules into a
// temp dir of the store, each named file is hashed, and an OCI manifest is written for it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>

#include "base/bounded_json.h"
#include "base/sha256.h"
#include "image/byte_source.h"
#include "image/decompress.h"
#include "image/layer_unpack.h"
#include "image/safe_fs.h"
#include "image/store.h"
#include "image/store_source.h"

namespace lsb::image {
namespace {

using nlohmann::json;

struct ArchiveImage {
  std::string config;
  std::vector<std::string> layers, repo_tags;
};

Result<std::vector<ArchiveImage>> ParseArchiveManifest(const std::string& text, size_t max_bytes, size_t max_images) {
  JsonLimits limits;
  limits.max_bytes = max_bytes;
  ParsedJson parsed = ParseBoundedJson(text, limits);
  if (!parsed.ok() || !parsed->is_array())
    return Error{ErrorCode::kInvalidArgument, "manifest.json of the archive is not a JSON array"};
  if (parsed->size() > max_images)
    return Error{ErrorCode::kResourceExhausted, "the archive holds more than " + std::to_string(max_images) + " images"};
  std::vector<ArchiveImage> out;
  for (const auto& e : *parsed) {
    ArchiveImage img;
    img.config = JsonStringOr(e, "Config", "");
    if (img.config.empty()) return Error{ErrorCode::kInvalidArgument, "manifest.json entry without Config"};
    for (const char* key : {"Layers", "RepoTags"}) {
      auto it = e.find(key);
      if (it == e.end() || !it->is_array()) continue;
      for (const auto& v : *it)
        if (v.is_string()) (std::string(key) == "Layers" ? img.layers : img.repo_tags).push_back(v.get<std::string>());
    }
    out.push_back(std::move(img));
  }
  if (out.empty()) return Error{ErrorCode::kInvalidArgument, "the archive's manifest.json lists no image"};
  return out;
}

const char* LayerMediaType(Compression c) {
  switch (c) {
    case Compression::kGzip: return kOciLayerGzip;
    case Compression::kZstd: return kOciLayerZstd;
    case Compression::kNone: break;
  }
  return kOciLayerTar;
}

}  // namespace

// The unpacked archive: digests map to files below its root.
class Store::ArchiveSource : public Store::BlobSource {
 public:
  explicit ArchiveSource(int root) : root_(root) {}
  void Map(const std::string& digest, const std::string& rel) { files_[digest] = rel; }
  Result<UniqueFd> Open(const std::string& digest) override {
    auto it = files_.find(digest);
    if (it == files_.end()) return Error{ErrorCode::kNotFound, "the archive has no blob " + digest};
    return OpenRegularInRoot(root_, it->second);
  }
  Status AddTo(BlobStore& blobs, const Descriptor& d, int tmp_fd) override {
    if (blobs.Has(d.digest)) return OkStatus();
    LSB_ASSIGN_OR_RETURN(UniqueFd fd, Open(d.digest));
    return blobs.AddFromFd(fd.get(), d.digest, static_cast<int64_t>(d.size), tmp_fd);
  }

 private:
  int root_;
  std::map<std::string, std::string> files_;
};

Result<std::vector<ImageRoot>> Store::ImportDockerArchive(const std::string& path,
                                                          const std::optional<ImageReference>& name) {
  auto fail = [&](const Error& e) { return e.Wrap("import " + path); };
  UniqueFd archive(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!archive) return fail(Error::FromErrno("open"));
  LSB_ASSIGN_OR_RETURN(TempDir work, NewTempDir("archive"));
  if (::mkdirat(work.fd(), "x", 0755) != 0) return fail(Error::FromErrno("mkdir"));
  LSB_ASSIGN_OR_RETURN(UniqueFd x, OpenDirBeneath(work.fd(), {"x"}, 1, false));
  UnpackLimits archive_limits = opts_.limits.unpack;
  archive_limits.max_layer_bytes = opts_.limits.unpack.max_layer_bytes * 4;  // several layers in one file
  auto unpacked = UnpackLayer(archive.get(), x.get(), archive_limits);
  if (!unpacked.ok()) return fail(unpacked.error().Wrap("not a docker save archive"));
  auto mf = OpenRegularInRoot(x.get(), "manifest.json");
  if (!mf.ok()) return fail(Error{ErrorCode::kInvalidArgument, "not a docker save archive (no manifest.json)"});
  LSB_ASSIGN_OR_RETURN(std::string mtext, ReadSmallFd(mf->get(), opts_.limits.max_json_bytes, "manifest.json"));
  auto images = ParseArchiveManifest(mtext, opts_.limits.max_json_bytes, opts_.limits.max_archive_images);
  if (!images.ok()) return fail(images.error());
  if (name && images->size() != 1)
    return fail(Error::InvalidArgument("name", "--name names one image but the archive holds " +
                                                   std::to_string(images->size())));

  ArchiveSource src(x.get());
  struct Planned {
    Descriptor manifest;
    std::vector<ImageReference> names;
  };
  std::vector<Planned> plan;
  for (size_t n = 0; n < images->size(); ++n) {
    const ArchiveImage& img = (*images)[n];
    auto hash = [&](const std::string& rel, Descriptor* d, Compression* c) -> Status {
      auto fd = OpenRegularInRoot(x.get(), rel);
      if (!fd.ok()) return fd.error().Wrap("archive member " + rel);
      if (c) {
        LSB_ASSIGN_OR_RETURN(*c, SniffCompression(fd->get()));
      }
      LSB_ASSIGN_OR_RETURN(d->digest, Sha256OfFd(fd->get(), &d->size));
      src.Map(d->digest, rel);
      return OkStatus();
    };
    json manifest = {{"schemaVersion", 2}, {"mediaType", kOciManifest}};
    Descriptor config;
    if (Status st = hash(img.config, &config, nullptr); !st.ok()) return fail(st.error());
    manifest["config"] = {{"mediaType", kOciConfig}, {"digest", config.digest}, {"size", config.size}};
    manifest["layers"] = json::array();
    for (const auto& rel : img.layers) {
      Descriptor layer;
      Compression c = Compression::kNone;
      if (Status st = hash(rel, &layer, &c); !st.ok()) return fail(st.error());
      manifest["layers"].push_back({{"mediaType", LayerMediaType(c)}, {"digest", layer.digest}, {"size", layer.size}});
    }
    std::string text = manifest.dump();
    Planned p;
    p.manifest.media_type = kOciManifest;
    p.manifest.digest = "sha256:" + Hex(Sha256(text));
    p.manifest.size = text.size();
    std::string file = "manifest-" + std::to_string(n) + ".json";
    LSB_TRY(WriteFileAtomic(x.get(), file, text));
    src.Map(p.manifest.digest, file);
    if (name) p.names.push_back(*name);
    for (const auto& tag : img.repo_tags) {
      if (name) break;
      auto ref = ParseImageReference(tag);
      if (!ref.ok()) return fail(ref.error().Wrap("RepoTags"));
      p.names.push_back(*ref);
    }
    if (p.names.empty())
      return fail(Error::InvalidArgument("name", "image " + std::to_string(n + 1) +
                                                     " of the archive has no name (RepoTags); pass --name REF"));
    plan.push_back(std::move(p));
  }
  LSB_ASSIGN_OR_RETURN(FileLock lock, LockForWrite());
  std::vector<ImageRoot> out;
  for (const auto& p : plan) {
    for (const auto& ref : p.names) {
      auto r = ImportFrom(src, p.manifest, ref);
      if (!r.ok()) return fail(r.error());
      out.push_back(std::move(r).value());
    }
  }
  return out;
}

}  // namespace lsb::image
