#include "scheduler/archive/tar_writer.h"

#include <cstdio>
#include <cstring>

namespace lsb::sched {
namespace {

constexpr size_t kBlock = 512;

void Pad(std::string& out) { out.append((kBlock - out.size() % kBlock) % kBlock, '\0'); }

// "LEN key=value\n" where LEN counts the whole record, itself included.
std::string PaxRecord(const std::string& key, std::string_view value) {
  std::string rec = " " + key + "=" + std::string(value) + "\n";
  size_t len = rec.size() + 1;
  while (std::to_string(len).size() + rec.size() != len) ++len;
  return std::to_string(len) + rec;
}

}  // namespace

void TarWriter::Header(std::string_view name, char type, uint64_t size, unsigned mode) {
  if (name.size() > 100) {
    std::string pax = PaxRecord("path", name);
    std::string short_name = "PaxHeaders/" + std::string(name.substr(name.size() - 80));
    Header(short_name, 'x', pax.size(), 0644);
    out_ += pax;
    Pad(out_);
    name = name.substr(0, 100);  // readers take the pax path
  }
  char h[kBlock] = {};
  std::memcpy(h, name.data(), std::min<size_t>(name.size(), 100));
  std::snprintf(h + 100, 8, "%07o", mode);
  std::snprintf(h + 108, 8, "%07o", 0);
  std::snprintf(h + 116, 8, "%07o", 0);
  std::snprintf(h + 124, 12, "%011llo", static_cast<unsigned long long>(size));
  std::snprintf(h + 136, 12, "%011o", 0);
  h[156] = type;
  std::memcpy(h + 257, "ustar\0" "00", 8);
  std::memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::snprintf(h + 148, 8, "%06o", sum);
  h[155] = ' ';
  out_.append(h, kBlock);
}

void TarWriter::Dir(std::string_view name) { Header(std::string(name) + "/", '5', 0, 0755); }

void TarWriter::File(std::string_view name, std::string_view data, bool executable) {
  Header(name, '0', data.size(), executable ? 0755 : 0644);
  out_ += data;
  Pad(out_);
}

std::string TarWriter::Finish() && {
  out_.append(2 * kBlock, '\0');
  return std::move(out_);
}

}  // namespace lsb::sched
