// Test helpers for the image store: tar archives written byte by byte (so hostile ones can be
// made: absolute names, "..", huge size claims, truncations), gzip/zstd of them, temp dirs, and
// OCI layouts built from layers.
#pragma once

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/sha256.h"

namespace lsb::image::testing {

class TarBuilder {
 public:
  // One header; `size` is what the header claims, `data` what follows (padded to 512).
  TarBuilder& Entry(const std::string& name, char type, const std::string& data = "", uint32_t mode = 0644,
                    const std::string& link = "", uint64_t claimed_size = UINT64_MAX, uint32_t major = 0,
                    uint32_t minor = 0) {
    char h[512] = {};
    std::memcpy(h, name.data(), std::min<size_t>(name.size(), 100));
    std::snprintf(h + 100, 8, "%07o", mode);
    std::snprintf(h + 108, 8, "%07o", 0);
    std::snprintf(h + 116, 8, "%07o", 0);
    uint64_t size = claimed_size == UINT64_MAX ? data.size() : claimed_size;
    std::snprintf(h + 124, 12, "%011llo", static_cast<unsigned long long>(size));
    std::snprintf(h + 136, 12, "%011o", 1700000000);
    h[156] = type;
    std::memcpy(h + 157, link.data(), std::min<size_t>(link.size(), 100));
    std::memcpy(h + 257, "ustar\0" "00", 8);
    std::snprintf(h + 329, 8, "%07o", major);
    std::snprintf(h + 337, 8, "%07o", minor);
    std::memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (unsigned char c : h) sum += c;
    std::snprintf(h + 148, 8, "%06o", sum);
    h[155] = ' ';
    out_.append(h, 512);
    out_ += data;
    out_.append((512 - data.size() % 512) % 512, '\0');
    return *this;
  }
  TarBuilder& File(const std::string& name, const std::string& data, uint32_t mode = 0644) {
    return Entry(name, '0', data, mode);
  }
  TarBuilder& Dir(const std::string& name, uint32_t mode = 0755) { return Entry(name, '5', "", mode); }
  TarBuilder& Symlink(const std::string& name, const std::string& target) { return Entry(name, '2', "", 0777, target); }
  TarBuilder& Hardlink(const std::string& name, const std::string& target) { return Entry(name, '1', "", 0644, target); }
  TarBuilder& Pax(const std::vector<std::pair<std::string, std::string>>& kv) {
    std::string body;
    for (const auto& [k, v] : kv) {
      std::string rec = " " + k + "=" + v + "\n";
      size_t len = rec.size() + 1;
      while (std::to_string(len).size() + rec.size() != len) ++len;
      body += std::to_string(len) + rec;
    }
    return Entry("PaxHeaders/x", 'x', body);
  }
  std::string Finish() const { return out_ + std::string(1024, '\0'); }
  std::string Unterminated() const { return out_; }

 private:
  std::string out_;
};

inline std::string Gzip(const std::string& data) {
  z_stream z {};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

inline std::string Zstd(const std::string& data) {
  std::string out(ZSTD_compressBound(data.size()), '\0');
  out.resize(ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3));
  return out;
}

inline std::string DigestOf(const std::string& data) { return "sha256:" + Hex(Sha256(data)); }

inline void WriteTo(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary) << data;
}

inline std::string ReadFrom(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class ScratchDir {
 public:
  ScratchDir() {
    char tmpl[] = "/tmp/lsb-image-test-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~ScratchDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// An OCI image layout with one image of `layers` (each a tar, compressed or not), tagged `tag`.
struct LayoutImage {
  std::vector<std::string> layers;           // blob bytes
  std::vector<std::string> diff_ids;         // "" = computed from the uncompressed tar given below
  std::vector<std::string> uncompressed;     // tars, for the diff_ids
  std::vector<std::string> env = {"PATH=/usr/local/bin:/usr/bin:/bin"};
  std::string architecture = "amd64";
};

inline std::string WriteBlob(const std::string& layout, const std::string& data) {
  std::string d = DigestOf(data);
  WriteTo(layout + "/blobs/sha256/" + d.substr(7), data);
  return d;
}

// Writes the layout; returns the manifest digest.
inline std::string MakeLayout(const std::string& dir, const LayoutImage& img, const std::string& tag,
                              std::string* manifest_json_out = nullptr) {
  ::mkdir(dir.c_str(), 0755);
  ::mkdir((dir + "/blobs").c_str(), 0755);
  ::mkdir((dir + "/blobs/sha256").c_str(), 0755);
  WriteTo(dir + "/oci-layout", "{\"imageLayoutVersion\":\"1.0.0\"}");
  nlohmann::json diff_ids = nlohmann::json::array(), layers = nlohmann::json::array();
  for (size_t i = 0; i < img.layers.size(); ++i) {
    std::string d = WriteBlob(dir, img.layers[i]);
    layers.push_back({{"mediaType", "application/vnd.oci.image.layer.v1.tar+gzip"}, {"digest", d},
                      {"size", img.layers[i].size()}});
    diff_ids.push_back(i < img.diff_ids.size() && !img.diff_ids[i].empty() ? img.diff_ids[i]
                                                                           : DigestOf(img.uncompressed[i]));
  }
  nlohmann::json config = {{"architecture", img.architecture}, {"os", "linux"}, {"created", "2024-01-02T03:04:05Z"},
                           {"config", {{"Env", img.env}, {"Cmd", {"python3"}}, {"WorkingDir", "/work"}}},
                           {"rootfs", {{"type", "layers"}, {"diff_ids", diff_ids}}}};
  std::string cj = config.dump();
  std::string cd = WriteBlob(dir, cj);
  nlohmann::json manifest = {{"schemaVersion", 2}, {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                             {"config", {{"mediaType", "application/vnd.oci.image.config.v1+json"}, {"digest", cd}, {"size", cj.size()}}},
                             {"layers", layers}};
  std::string mj = manifest.dump();
  std::string md = WriteBlob(dir, mj);
  nlohmann::json index = {{"schemaVersion", 2},
                          {"manifests", {{{"mediaType", "application/vnd.oci.image.manifest.v1+json"}, {"digest", md},
                                          {"size", mj.size()},
                                          {"annotations", {{"org.opencontainers.image.ref.name", tag}}}}}}};
  WriteTo(dir + "/index.json", index.dump());
  if (manifest_json_out) *manifest_json_out = mj;
  return md;
}

}  // namespace lsb::image::testing
