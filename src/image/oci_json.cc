#include "image/oci_json.h"

#include <sys/utsname.h>

#include <string_view>

#include "base/bounded_json.h"
#include "image/reference.h"

namespace lsb::image {
namespace {

using nlohmann::json;

Error Bad(const std::string& what) { return Error{ErrorCode::kInvalidArgument, what}; }

Result<json> Parse(const std::string& text, size_t max_bytes, const char* what) {
  JsonLimits limits;
  limits.max_bytes = max_bytes;
  limits.max_depth = 32;
  limits.max_elements = 1u << 16;
  ParsedJson parsed = ParseBoundedJson(text, limits);
  if (!parsed.ok()) return Bad(std::string(what) + ": " + parsed.error().message);
  if (!parsed->is_object()) return Bad(std::string(what) + ": not a JSON object");
  return std::move(parsed).value();
}

std::vector<std::string> Strings(const json& obj, std::string_view key) {
  std::vector<std::string> out;
  if (!obj.is_object()) return out;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_array()) return out;
  for (const auto& v : *it)
    if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

Result<Descriptor> ParseDescriptor(const json& j, const char* what) {
  if (!j.is_object()) return Bad(std::string(what) + ": descriptor is not an object");
  Descriptor d;
  d.media_type = JsonStringOr(j, "mediaType", "");
  d.digest = JsonStringOr(j, "digest", "");
  if (!IsSha256Digest(d.digest))
    return Bad(std::string(what) + ": digest '" + d.digest.substr(0, 80) + "' is not sha256:<64 hex> (only sha256 is accepted)");
  auto size = j.find("size");
  if (size == j.end() || !size->is_number_unsigned()) return Bad(std::string(what) + ": descriptor has no size");
  d.size = size->get<uint64_t>();
  if (auto p = j.find("platform"); p != j.end() && p->is_object()) {
    d.os = JsonStringOr(*p, "os", "");
    d.architecture = JsonStringOr(*p, "architecture", "");
    d.variant = JsonStringOr(*p, "variant", "");
  }
  if (auto a = j.find("annotations"); a != j.end() && a->is_object()) d.ref_name = JsonStringOr(*a, kRefNameAnnotation, "");
  return d;
}

}  // namespace

bool IsIndexMediaType(const std::string& t) { return t == kOciIndex || t == kDockerManifestList; }
bool IsManifestMediaType(const std::string& t) { return t == kOciManifest || t == kDockerManifest; }
bool IsLayerMediaType(const std::string& t) {
  return t == kOciLayerTar || t == kOciLayerGzip || t == kOciLayerZstd ||
         t == "application/vnd.docker.image.rootfs.diff.tar.gzip" || t == "application/vnd.docker.image.rootfs.diff.tar" ||
         t == "application/vnd.docker.image.rootfs.diff.tar.zstd";
}

Result<std::string> SniffMediaType(const std::string& text, size_t max_bytes) {
  LSB_ASSIGN_OR_RETURN(json j, Parse(text, max_bytes, "image manifest"));
  std::string t = JsonStringOr(j, "mediaType", "");
  if (!t.empty()) return t;
  if (j.contains("manifests")) return std::string(kOciIndex);
  if (j.contains("layers")) return std::string(kOciManifest);
  return Bad("image manifest: neither a manifest (no \"layers\") nor an index (no \"manifests\")");
}

Result<Manifest> ParseManifest(const std::string& text, size_t max_bytes) {
  LSB_ASSIGN_OR_RETURN(json j, Parse(text, max_bytes, "image manifest"));
  Manifest m;
  m.media_type = JsonStringOr(j, "mediaType", kOciManifest);
  if (!IsManifestMediaType(m.media_type)) return Bad("image manifest: unsupported media type '" + m.media_type + "'");
  if (!j.contains("config")) return Bad("image manifest: no config");
  LSB_ASSIGN_OR_RETURN(m.config, ParseDescriptor(j["config"], "image manifest config"));
  auto layers = j.find("layers");
  if (layers == j.end() || !layers->is_array()) return Bad("image manifest: no layers array");
  for (const auto& l : *layers) {
    LSB_ASSIGN_OR_RETURN(Descriptor d, ParseDescriptor(l, "image manifest layer"));
    if (!IsLayerMediaType(d.media_type))
      return Bad("image manifest: layer " + d.digest + " has unsupported media type '" + d.media_type +
                 "' (foreign or non-distributable layers are not supported)");
    m.layers.push_back(std::move(d));
  }
  return m;
}

Result<Index> ParseIndex(const std::string& text, size_t max_bytes) {
  LSB_ASSIGN_OR_RETURN(json j, Parse(text, max_bytes, "image index"));
  Index idx;
  auto ms = j.find("manifests");
  if (ms == j.end() || !ms->is_array()) return Bad("image index: no manifests array");
  for (const auto& m : *ms) {
    LSB_ASSIGN_OR_RETURN(Descriptor d, ParseDescriptor(m, "image index entry"));
    idx.manifests.push_back(std::move(d));
  }
  return idx;
}

Result<Config> ParseConfig(const std::string& text, size_t max_bytes) {
  LSB_ASSIGN_OR_RETURN(json j, Parse(text, max_bytes, "image config"));
  Config c;
  c.image.os = JsonStringOr(j, "os", "linux");
  c.image.architecture = JsonStringOr(j, "architecture", "");
  c.created = JsonStringOr(j, "created", "");
  if (auto cfg = j.find("config"); cfg != j.end() && cfg->is_object()) {
    c.image.env = Strings(*cfg, "Env");
    c.image.entrypoint = Strings(*cfg, "Entrypoint");
    c.image.cmd = Strings(*cfg, "Cmd");
    c.image.working_dir = JsonStringOr(*cfg, "WorkingDir", "");
    c.image.user = JsonStringOr(*cfg, "User", "");
  }
  auto rootfs = j.find("rootfs");
  if (rootfs == j.end() || !rootfs->is_object()) return Bad("image config: no rootfs");
  c.diff_ids = Strings(*rootfs, "diff_ids");
  for (const auto& d : c.diff_ids)
    if (!IsSha256Digest(d)) return Bad("image config: diff_id '" + d.substr(0, 80) + "' is not sha256:<64 hex>");
  return c;
}

std::string HostArchitecture() {
  utsname u {};
  ::uname(&u);
  std::string_view m = u.machine;
  if (m == "x86_64") return "amd64";
  if (m == "aarch64") return "arm64";
  if (m == "armv7l") return "arm";
  if (m == "i686" || m == "i386") return "386";
  return std::string(m);
}

Result<Descriptor> PickPlatform(const Index& index) {
  std::string arch = HostArchitecture(), seen;
  for (const auto& d : index.manifests) {
    if (d.os == "linux" && d.architecture == arch) return d;
    if (!d.os.empty()) seen += (seen.empty() ? "" : ", ") + d.os + "/" + d.architecture;
  }
  // An index without platforms (as `skopeo copy` of one image writes): its single manifest.
  if (index.manifests.size() == 1 && index.manifests[0].os.empty()) return index.manifests[0];
  return Error{ErrorCode::kNotFound, "the image has no manifest for linux/" + arch +
                                          (seen.empty() ? std::string() : " (it has: " + seen + ")")};
}

}  // namespace lsb::image
