// A small tar writer for what leaves a box (GET /v1/sessions/{id}/archive): ustar headers, a pax
// header for a name past ustar's 100 bytes, directories and regular files only, owner 0:0 and a
// fixed time (nothing of the host or the box's clock leaks into it).
#pragma once

#include <string>
#include <string_view>

namespace lsb::sched {

class TarWriter {
 public:
  void Dir(std::string_view name);  // without the trailing '/'
  void File(std::string_view name, std::string_view data, bool executable);
  // The archive with its two end blocks; the writer is spent.
  std::string Finish() &&;

 private:
  void Header(std::string_view name, char type, uint64_t size, unsigned mode);
  std::string out_;
};

}  // namespace lsb::sched
