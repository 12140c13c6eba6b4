#include "scheduler/changes/git_binary.h"

#include <openssl/evp.h>
#include <zlib.h>

#include <vector>

namespace lsb::sched {

std::string GitBlobId(std::string_view bytes) {
  std::string head = "blob " + std::to_string(bytes.size()) + std::string(1, '\0');
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha1(), nullptr);
  EVP_DigestUpdate(ctx, head.data(), head.size());
  EVP_DigestUpdate(ctx, bytes.data(), bytes.size());
  EVP_DigestFinal_ex(ctx, md, &n);
  EVP_MD_CTX_free(ctx);
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

std::string GitBinaryLiteral(std::string_view bytes) {
  static const char k85[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";
  uLongf size = compressBound(static_cast<uLong>(bytes.size()));
  std::vector<unsigned char> z(size);
  compress2(z.data(), &size, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uLong>(bytes.size()), 9);
  std::string out = "literal " + std::to_string(bytes.size()) + "\n";
  for (size_t at = 0; at < size; at += 52) {
    size_t n = std::min<size_t>(52, size - at);
    out += n <= 26 ? static_cast<char>('A' + n - 1) : static_cast<char>('a' + n - 27);
    for (size_t g = 0; g < n; g += 4) {
      uint32_t acc = 0;
      for (size_t i = 0; i < 4; ++i) acc = (acc << 8) | (g + i < n ? z[at + g + i] : 0);
      char five[5];
      for (int i = 4; i >= 0; --i) {
        five[i] = k85[acc % 85];
        acc /= 85;
      }
      out.append(five, 5);
    }
    out += '\n';
  }
  return out + "\n";
}

}  // namespace lsb::sched
