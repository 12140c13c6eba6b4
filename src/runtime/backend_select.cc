#include "runtime/backend_select.h"

#include "runtime/native/native_backend.h"

namespace lsb {

std::vector<std::string> BackendNames() { return {"auto", "native"}; }

Result<std::unique_ptr<Backend>> MakeBackend(const std::string& name, const BackendOptions& opts) {
  if (name == "auto" || name == "native" || name.empty()) {
    native::NativeOptions n;
    n.images_file = opts.images_file;
    n.init_path = opts.init_path;
    return std::unique_ptr<Backend>(new native::NativeBackend(n));
  }
  std::string known;
  for (const auto& b : BackendNames()) known += (known.empty() ? "" : ", ") + b;
  return Error{"unknown backend '" + name + "'; known: " + known};
}

}  // namespace lsb
