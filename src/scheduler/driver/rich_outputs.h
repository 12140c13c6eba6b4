// Rich outputs (docs/api.md "Rich outputs"): what a Python program displays comes back in the
// result's `outputs`, a list of entries, each a JSON object {mime type: data} (binary data as
// base64, application/json as JSON) or {"error": why}. Matplotlib figures shown with plt.show()
// or left open at the end; in a session also the last expression's value, Jupyter-style.
//   one-shot/batch: the language's command gets a prelude (`python3 -c PRELUDE ... main.py`)
//     that runs the program in its own __main__, writes each entry as a JSON file into a stage
//     directory on the first writable tmpfs and ends stderr with a trailer line naming the
//     count; the host strips the trailer and reads the files back with the in-box helper.
//   sessions: the driver keeps the entries of each execution; op "O" hands them over.
// Everything the box sends is hostile: entries are parsed with the bounded JSON parser and
// checked for shape here, counted and summed against OutputsLimits.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "policy/policy.h"
#include "runtime/exec_result.h"
#include "runtime/runner.h"

namespace lsb::sched {

class PythonDriver;

// The bounds of `outputs` per execution (docs/api.md).
struct OutputsLimits {
  size_t max_entries = 16;
  uint64_t max_entry_bytes = 4u << 20;  // one entry's JSON (a PNG in base64 is 4/3 of its bytes)
  uint64_t max_bytes = 12u << 20;       // all entries together
};

// The Python that defines _lsb_rich_install(max_entries, max_entry_bytes) (rich_output_source.cc).
const std::string& RichOutputSource();
// The one-shot prelude: the run of the program file, with RichOutputSource() as a string compiled
// at the program's first import of matplotlib.pyplot.
const std::string& OneShotPreludeSource();

// A one-shot run's outputs plan: where the box stages entries and the trailer's token.
struct OneShotOutputs {
  std::string stage;  // <first tmpfs>/.lsb-outputs-<random>
  std::string token;  // random; the stderr trailer is "\x1e<token> outputs <n>\n"
};

// Whether `req` gets rich outputs under `policy`: Python code (not a command) of a language whose
// command ends in "{file}" and whose interpreter the policy allows, with outputs not turned off.
// Sets req.prelude_args and returns the plan; nullopt when the run does not get them (also for a
// policy with no writable tmpfs to stage them in: docs/api.md says so).
std::optional<OneShotOutputs> PlanOneShotOutputs(const Policy& policy, ExecRequest& req, const OutputsLimits& limits);

// Strips the trailer from `stderr_data` (the last line, when it is one); returns the count it
// named, or nullopt when there was none. `error` gets the box's words when staging failed.
std::optional<uint64_t> TakeTrailer(std::string& stderr_data, const std::string& token, std::string* error);

// The live-stream form: a stderr chunk with the trailer removed (init sends whole lines).
std::string_view WithoutTrailer(std::string_view chunk, const std::string& token);

// One entry from the box, checked: an object whose keys are MIME types ("type/subtype") or
// "error", string values (application/json: any JSON). A bad entry becomes {"error": why}.
nlohmann::json CheckedEntry(std::string_view text, uint64_t max_entry_bytes);

// Adds `entries` (JSON texts) to r.outputs within the limits; past them, one error entry.
void AddOutputs(const std::vector<std::string>& entries, const OutputsLimits& limits, ExecResult& r);

// After a one-shot run: reads the staged entries back through a fresh in-box helper.
void CollectOutputs(BoxSession& session, const OneShotOutputs& plan, uint64_t count, const OutputsLimits& limits,
                    ExecResult& r);

// A session's driver: the entries of its last execution (op "O").
Status TakeDriverOutputs(PythonDriver& driver, const OutputsLimits& limits, ExecResult& r);

}  // namespace lsb::sched
