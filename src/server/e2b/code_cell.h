// runCode's cell, run by the sandbox's persistent interpreter (docs/e2b.md "Code interpreter"):
// the client's code is wrapped so that, as in a notebook, the last expression's value becomes the
// main result (text, and _repr_html_/_repr_png_... when the value has them), every open
// matplotlib figure becomes a PNG result, and an exception is reported as {name, value,
// traceback} instead of killing the cell. The wrapper runs in the session's globals (so variables
// persist) under names it removes again, and reports on stdout after a per-call random marker;
// the host splits the client's stdout from the report there.
//
// Reconcile later: this is the front door's own minimal capture. When the session interpreter
// reports rich outputs itself (ExecResult outputs), this wrapper should give way to them.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace lsb::server::e2b {

std::string CodeCellSource(const std::string& code, const std::string& marker);

struct CellReport {
  std::string stdout_data;     // the client's own stdout (the report removed)
  nlohmann::json results;      // E2B result objects (array)
  nlohmann::json error;        // {name, value, traceback} or null
  bool reported = false;       // false: the cell ended before its report (timeout, os._exit, a crash)
};
CellReport ParseCellReport(const std::string& stdout_data, const std::string& marker);

}  // namespace lsb::server::e2b
