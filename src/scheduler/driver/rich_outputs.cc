#include "scheduler/driver/rich_outputs.h"

#include <cctype>
#include <charconv>

#include "base/bounded_json.h"
#include "base/random_id.h"
#include "policy/languages.h"
#include "scheduler/driver/python_driver.h"
#include "scheduler/workspace_io.h"

namespace lsb::sched {
namespace {

constexpr uint64_t kOpTimeoutMs = 60000;

nlohmann::json ErrorEntry(const std::string& why) { return {{"error", why}}; }

// "type/subtype": the token characters of RFC 6838, at most 127 bytes.
bool IsMimeType(const std::string& k) {
  size_t slash = k.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == k.size() || k.size() > 127) return false;
  // RFC 6838 restricted names: type and subtype each begin with a letter or digit ("../x" is not one).
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(k[0]) || !alnum(k[slash + 1])) return false;
  for (size_t i = 0; i < k.size(); ++i) {
    char c = k[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '+' || c == '-' || c == '_' || (c == '/' && i == slash);
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::optional<OneShotOutputs> PlanOneShotOutputs(const Policy& policy, ExecRequest& req, const OutputsLimits& limits) {
  if (!req.outputs || !req.command.empty()) return std::nullopt;
  auto lang = ResolveLanguage(policy, req.language);
  if (!lang.ok() || lang->name != "python" || lang->command.empty() || lang->command.back() != "{file}")
    return std::nullopt;
  if (!policy.Allows(lang->command[0]) || policy.Denies(lang->command[0])) return std::nullopt;
  if (policy.tmpfs.empty()) return std::nullopt;
  OneShotOutputs plan;
  std::string root = policy.tmpfs.front().path;
  plan.stage = (root == "/" ? "" : root) + "/" + RandomHex(".lsb-outputs-", 8);
  plan.token = RandomHex("LSB-OUT-", 12);
  req.prelude_args = {"-c", OneShotPreludeSource(), plan.stage, plan.token, std::to_string(limits.max_entries),
                      std::to_string(limits.max_entry_bytes)};
  return plan;
}

std::optional<uint64_t> TakeTrailer(std::string& err, const std::string& token, std::string* error) {
  const std::string head = "\x1e" + token + " outputs ";
  size_t at = err.rfind(head);
  if (at == std::string::npos || err.empty() || err.back() != '\n') return std::nullopt;
  if (at != 0 && err[at - 1] != '\n') return std::nullopt;
  std::string rest = err.substr(at + head.size(), err.size() - 1 - at - head.size());
  if (rest.find('\n') != std::string::npos) return std::nullopt;  // not the last line
  err.resize(at);
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), n);
  if (ec != std::errc()) return std::nullopt;
  size_t used = static_cast<size_t>(end - rest.data());
  if (used < rest.size() && error) *error = rest.substr(used + 1, 500);
  return n;
}

std::string_view WithoutTrailer(std::string_view chunk, const std::string& token) {
  const std::string head = "\x1e" + token + " outputs ";
  size_t at = chunk.rfind(head);
  if (at == std::string_view::npos || (at != 0 && chunk[at - 1] != '\n')) return chunk;
  return chunk.substr(0, at);
}

nlohmann::json CheckedEntry(std::string_view text, uint64_t max_entry_bytes) {
  if (text.size() > max_entry_bytes)
    return ErrorEntry("an output is " + std::to_string(text.size()) + " bytes; the limit is " + std::to_string(max_entry_bytes));
  JsonLimits jl;
  jl.max_bytes = max_entry_bytes;
  jl.max_depth = 32;
  jl.max_elements = 100000;
  ParsedJson j = ParseBoundedJson(text, jl);
  if (!j.ok() || !j->is_object() || j->empty()) return ErrorEntry("the box sent a malformed output entry");
  for (const auto& [k, v] : j->items()) {
    if (k == "error") {
      if (!v.is_string() || j->size() != 1) return ErrorEntry("the box sent a malformed output entry");
      return ErrorEntry(v.get<std::string>().substr(0, 2000));
    }
    if (!IsMimeType(k)) return ErrorEntry("the box sent an output with a key that is not a MIME type");
    if (k != "application/json" && !v.is_string()) return ErrorEntry("the box sent an output whose " + k + " is not a string");
  }
  return std::move(j).value();
}

void AddOutputs(const std::vector<std::string>& entries, const OutputsLimits& limits, ExecResult& r) {
  uint64_t bytes = 0;
  for (const auto& t : entries) {
    if (r.outputs.size() >= limits.max_entries) {
      r.outputs.push_back(ErrorEntry("more than " + std::to_string(limits.max_entries) + " outputs; the rest are not returned"));
      return;
    }
    if (bytes + t.size() > limits.max_bytes) {
      r.outputs.push_back(ErrorEntry("left out: the outputs of an execution may take " + std::to_string(limits.max_bytes) + " bytes in all"));
      continue;
    }
    bytes += t.size();
    r.outputs.push_back(CheckedEntry(t, limits.max_entry_bytes));
  }
}

void CollectOutputs(BoxSession& session, const OneShotOutputs& plan, uint64_t count, const OutputsLimits& limits,
                    ExecResult& r) {
  if (count == 0) return;
  if (!session.usable()) {
    r.outputs.push_back(ErrorEntry("outputs not returned: the box ended with the program"));
    return;
  }
  CollectLimits cl;
  cl.max_files = limits.max_entries + 1;  // the box's own "more than" entry
  cl.max_file_bytes = limits.max_entry_bytes;
  cl.max_bytes = limits.max_bytes + limits.max_entry_bytes;
  auto got = CollectFromBox(session, {plan.stage + "/*.json"}, cl);
  if (!got.ok()) {
    r.outputs.push_back(ErrorEntry("outputs not returned: " + got.error().message));
    return;
  }
  std::vector<std::string> texts;
  for (auto& f : *got) {
    if (f.path == plan.stage + "/*.json") continue;  // nothing there after all (the program removed it)
    if (!f.error.empty()) {
      r.outputs.push_back(ErrorEntry("an output was not returned: " + f.error));
      continue;
    }
    texts.push_back(std::move(f.data));
  }
  AddOutputs(texts, limits, r);
}

Status TakeDriverOutputs(PythonDriver& driver, const OutputsLimits& limits, ExecResult& r) {
  uint64_t cap = limits.max_bytes + (limits.max_entries + 2) * (limits.max_entry_bytes / 4 + 64);
  cap = std::max<uint64_t>(cap, limits.max_bytes + limits.max_entry_bytes + 4096);
  LSB_ASSIGN_OR_RETURN(FileOpResult got, driver.RecordOp('O', "", "", kOpTimeoutMs, cap));
  if (got.status != FileOpStatus::kOk) return Error{"outputs: " + got.message.substr(0, 500)};
  // "<n>\n<entry JSON>" each, as hostile input.
  std::vector<std::string> texts;
  std::string_view in = got.data;
  while (!in.empty()) {
    size_t nl = in.find('\n');
    uint64_t n = 0;
    if (nl == std::string_view::npos || nl > 20) return Error{"the session's interpreter sent malformed outputs"};
    auto [end, ec] = std::from_chars(in.data(), in.data() + nl, n);
    if (ec != std::errc() || end != in.data() + nl || n > in.size() - nl - 1)
      return Error{"the session's interpreter sent malformed outputs"};
    if (texts.size() > limits.max_entries) return Error{"the session's interpreter sent more outputs than asked for"};
    texts.emplace_back(in.substr(nl + 1, n));
    in.remove_prefix(nl + 1 + n);
  }
  AddOutputs(texts, limits, r);
  return OkStatus();
}

}  // namespace lsb::sched
