#include "image/registry_manifest.h"

#include <sys/utsname.h>

#include "base/bounded_json.h"
#include "image/reference.h"

namespace lsb::image::registry {
namespace {

bool IsIndexType(std::string_view t) { return t == kOciIndex || t == kDockerList; }
bool IsImageType(std::string_view t) { return t == kOciManifest || t == kDockerManifest; }
bool IsSchema1(std::string_view t) {
  return t == "application/vnd.docker.distribution.manifest.v1+json" ||
         t == "application/vnd.docker.distribution.manifest.v1+prettyjws";
}

// "application/json; charset=utf-8" -> "application/json".
std::string_view BareType(std::string_view t) {
  auto semi = t.find(';');
  if (semi != std::string_view::npos) t = t.substr(0, semi);
  while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
  return t;
}

Result<Descriptor> ParseDescriptor(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) return Error::InvalidArgument("manifest", where + " is not an object");
  Descriptor d;
  d.media_type = JsonStringOr(j, "mediaType", "");
  d.digest = JsonStringOr(j, "digest", "");
  if (!IsSha256Digest(d.digest))
    return Error::InvalidArgument("manifest", where + " has digest \"" + d.digest.substr(0, 80) +
                                                  "\"; only sha256:<64 lowercase hex> is accepted");
  auto size = j.find("size");
  if (size == j.end() || !size->is_number_unsigned())
    return Error::InvalidArgument("manifest", where + " has no non-negative integer size");
  d.size = size->get<uint64_t>();
  if (d.size > kMaxBlobBytes)
    return Error::InvalidArgument("manifest", where + " declares " + std::to_string(d.size) + " bytes, over the " +
                                                  std::to_string(kMaxBlobBytes >> 30) + " GiB a blob may have");
  if (auto p = j.find("platform"); p != j.end() && p->is_object()) {
    d.platform.os = JsonStringOr(*p, "os", "");
    d.platform.architecture = JsonStringOr(*p, "architecture", "");
    d.platform.variant = JsonStringOr(*p, "variant", "");
  }
  return d;
}

int VariantNumber(const std::string& v) {
  if (v.size() < 2 || v[0] != 'v') return 0;
  int n = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i] < '0' || v[i] > '9' || n > 100) return 0;
    n = n * 10 + (v[i] - '0');
  }
  return n;
}

}  // namespace

std::string ManifestAccept() {
  return std::string(kOciIndex) + ", " + std::string(kOciManifest) + ", " + std::string(kDockerList) + ", " +
         std::string(kDockerManifest);
}

std::string Platform::ToString() const {
  return os + "/" + architecture + (variant.empty() ? "" : "/" + variant);
}

Platform HostPlatform() {
  utsname u{};
  uname(&u);
  std::string m = u.machine;
  Platform p{"linux", m, ""};
  if (m == "x86_64") p.architecture = "amd64";
  else if (m == "aarch64" || m == "arm64") p = {"linux", "arm64", "v8"};
  else if (m.rfind("armv", 0) == 0) p = {"linux", "arm", "v" + std::string(1, m.size() > 4 ? m[4] : '7')};
  else if (m == "i386" || m == "i686") p.architecture = "386";
  return p;
}

Result<Manifest> ParseManifest(std::string_view body, std::string_view content_type) {
  if (body.size() > kMaxManifestBytes)
    return Error::InvalidArgument("manifest", "the manifest is " + std::to_string(body.size()) + " bytes, over the " +
                                                  std::to_string(kMaxManifestBytes) + " a manifest may have");
  JsonLimits limits;
  limits.max_bytes = kMaxManifestBytes;
  limits.max_depth = 16;
  auto parsed = ParseBoundedJson(body, limits);
  if (!parsed.ok()) return Error::InvalidArgument("manifest", "the manifest is not JSON: " + parsed.error().message);
  const auto& j = *parsed;
  if (!j.is_object()) return Error::InvalidArgument("manifest", "the manifest is not a JSON object");
  std::string type(BareType(content_type));
  std::string body_type = JsonStringOr(j, "mediaType", "");
  // Registries answer application/json (or text/plain) for a manifest pushed without a type.
  if (!IsIndexType(type) && !IsImageType(type) && !IsSchema1(type)) type = body_type;
  auto sv = j.find("schemaVersion");
  if (IsSchema1(type) || (sv != j.end() && sv->is_number_integer() && sv->get<int64_t>() == 1))
    return Error::InvalidArgument("manifest",
                                  "the image is in Docker's manifest schema 1, which llm-sandbox refuses (no "
                                  "content-addressed config, deprecated since Docker 1.10); push it again with a "
                                  "current Docker or skopeo so the registry has a schema 2 or OCI manifest");
  if (type.empty()) {  // an OCI manifest may leave mediaType out: tell the kinds by their members
    if (j.contains("manifests")) type = kOciIndex;
    else if (j.contains("config")) type = kOciManifest;
  }
  Manifest m;
  m.media_type = type;
  if (IsIndexType(type)) {
    m.kind = ManifestKind::kIndex;
    auto list = j.find("manifests");
    if (list == j.end() || !list->is_array()) return Error::InvalidArgument("manifest", "the index has no \"manifests\" list");
    if (list->size() > kMaxIndexEntries)
      return Error::InvalidArgument("manifest", "the index has " + std::to_string(list->size()) + " entries, over the " +
                                                    std::to_string(kMaxIndexEntries) + " allowed");
    for (size_t i = 0; i < list->size(); ++i) {
      LSB_ASSIGN_OR_RETURN(Descriptor d, ParseDescriptor((*list)[i], "manifests[" + std::to_string(i) + "]"));
      m.manifests.push_back(std::move(d));
    }
    return m;
  }
  if (!IsImageType(type))
    return Error::InvalidArgument("manifest", "the registry served a manifest of type \"" + type.substr(0, 100) +
                                                  "\"; an image index, manifest list, OCI or Docker v2 manifest is needed");
  auto config = j.find("config");
  if (config == j.end()) return Error::InvalidArgument("manifest", "the image manifest has no config");
  LSB_ASSIGN_OR_RETURN(m.config, ParseDescriptor(*config, "config"));
  if (m.config.size > kMaxConfigBytes)
    return Error::InvalidArgument("manifest", "the image config declares " + std::to_string(m.config.size) +
                                                  " bytes, over the " + std::to_string(kMaxConfigBytes) + " allowed");
  auto layers = j.find("layers");
  if (layers == j.end() || !layers->is_array()) return Error::InvalidArgument("manifest", "the image manifest has no layers list");
  if (layers->size() > kMaxLayers)
    return Error::InvalidArgument("manifest", "the image has " + std::to_string(layers->size()) + " layers, over the " +
                                                  std::to_string(kMaxLayers) + " allowed");
  for (size_t i = 0; i < layers->size(); ++i) {
    LSB_ASSIGN_OR_RETURN(Descriptor d, ParseDescriptor((*layers)[i], "layers[" + std::to_string(i) + "]"));
    m.layers.push_back(std::move(d));
  }
  return m;
}

Result<Descriptor> SelectPlatform(const Manifest& index, const Platform& host) {
  const Descriptor* best = nullptr;
  int best_score = -1;
  std::string have;
  int host_variant = VariantNumber(host.variant);
  for (const auto& d : index.manifests) {
    const Platform& p = d.platform;
    if (!have.empty()) have += ", ";
    have += p.os.empty() ? std::string("(no platform)") : p.ToString();
    if (p.os != host.os || p.architecture != host.architecture) continue;
    int score;
    if (host.architecture == "arm64") {
      if (!p.variant.empty() && p.variant != "v8") continue;
      score = p.variant == "v8" ? 2 : 1;
    } else if (host.architecture == "arm") {
      int v = p.variant.empty() ? 0 : VariantNumber(p.variant);
      if (!p.variant.empty() && (v == 0 || v > host_variant)) continue;
      score = p.variant.empty() ? 1 : 2 + v;  // the highest variant the host runs
    } else {
      score = p.variant == host.variant ? 2 : 1;
    }
    if (score > best_score) {
      best_score = score;
      best = &d;
    }
  }
  if (best == nullptr)
    return Error{ErrorCode::kNotFound, "the image has no variant for this host's platform " + host.ToString() +
                                           " (it has: " + (have.empty() ? std::string("none") : have) + ")"};
  return *best;
}

}  // namespace lsb::image::registry
