// The hand-rolled option loops of `serve` and `logs`: each option in turn, its value given as
// "--name=value" or "--name value".
#pragma once

#include <string>

#include "cli/commands.h"

namespace lsb::cli {

class OptionCursor {
 public:
  explicit OptionCursor(const Args& args) : args_(args) {}
  bool Next() { return ++i_ < args_.size(); }
  const std::string& arg() const { return args_[i_]; }
  const std::string& value() const { return v_; }
  // True (value() set, the cursor past the value) when the current option is `name` with a value.
  bool Is(const char* name) {
    const std::string& a = args_[i_];
    std::string prefix = std::string(name) + "=";
    if (a.rfind(prefix, 0) == 0) {
      v_ = a.substr(prefix.size());
      return true;
    }
    if (a == name && i_ + 1 < args_.size()) {
      v_ = args_[++i_];
      return true;
    }
    return false;
  }
  // Is(name), the value copied to `out`.
  bool Into(const char* name, std::string& out) {
    if (!Is(name)) return false;
    out = v_;
    return true;
  }

 private:
  const Args& args_;
  size_t i_ = static_cast<size_t>(-1);
  std::string v_;
};

}  // namespace lsb::cli
