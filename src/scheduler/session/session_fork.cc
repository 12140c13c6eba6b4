#include "scheduler/session/session_fork.h"

#include <nlohmann/json.hpp>

#include "base/random_id.h"
#include "inbox/inbox_sources.h"

namespace lsb::sched {
namespace {

using nlohmann::json;

// The report line of the snippets below: the last line of stdout starting with this marker (code
// an import runs may print too).
constexpr std::string_view kReportMarker = "\x1elsb-fork ";

std::string WithPath(std::string_view code, const std::string& path) {
  std::string s(code);
  std::string lit = json(path).dump();  // a JSON string is a python string literal here (ASCII path)
  for (size_t at; (at = s.find("%PATH%")) != std::string::npos;) s.replace(at, 6, lit);
  return s;
}

// Runs a snippet in the session's interpreter and returns its report, or why it failed.
Result<json> RunSnippet(Session& s, const std::string& code, const char* what) {
  ExecRequest req;
  req.code = code;
  req.language = "python";
  LSB_ASSIGN_OR_RETURN(ExecResult r, s.Execute(req));
  const std::string& out = r.stdout_data;
  size_t at = out.rfind(kReportMarker);
  if (r.status != ExecStatus::kOk || at == std::string::npos)
    return Error{std::string(what) + " failed (" + protocol::Name(r.status) + "): " +
                 (r.truncated ? "the output was cut; " : "") + r.stderr_data.substr(0, 2000)};
  size_t end = out.find('\n', at);
  auto j = json::parse(out.substr(at + kReportMarker.size(), end == std::string::npos ? std::string::npos
                                                                                       : end - at - kReportMarker.size()),
                       nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error{std::string(what) + ": the interpreter's report is not JSON"};
  return j;
}

}  // namespace

std::vector<std::string> StringsAt(const nlohmann::json& j, const char* key) {
  std::vector<std::string> out;
  if (j.contains(key) && j[key].is_array())
    for (const auto& v : j[key])
      if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

Result<ForkExport> ExportForFork(Session& parent, const TreeLimits& tree, const ArchiveLimits& archive) {
  const Policy& policy = parent.policy();
  if (!parent.RunsInInterpreter(""))
    return Error{ErrorCode::kInvalidArgument,
                 "fork: only a python session can be forked (its interpreter holds the state); this one's language is " +
                     parent.config().language};
  if (policy.tmpfs.empty())
    return Error{ErrorCode::kInvalidArgument,
                 "fork: policy '" + policy.name + "' has no writable path to carry the state through"};
  ForkExport ex;
  ex.state_path = policy.tmpfs.front().path + "/" + RandomHex(".lsb-fork-", 8);
  // src/inbox/fork_export.py, in the parent's globals: every value pickled alone (so one that does
  // not pickle is named, not fatal), modules by name, the interpreter's top-level imports; then the report.
  LSB_ASSIGN_OR_RETURN(json report, RunSnippet(parent, WithPath(inbox::ForkExportSource(), ex.state_path),
                                               "fork: saving the interpreter state"));
  ex.values = StringsAt(report, "values");
  ex.modules = StringsAt(report, "modules");
  ex.skipped = StringsAt(report, "skipped");
  Status copied = OkStatus();
  for (const auto& m : policy.tmpfs) {
    auto t = parent.GetTree(m.path, tree);
    if (!t.ok()) {
      copied = Error{t.error().code, "fork: copying " + m.path + ": " + t.error().message};
      break;
    }
    auto a = ReadArchive(t->tar, m.path, archive);
    if (!a.ok()) {
      copied = Error{a.error().code, "fork: copying " + m.path + ": " + a.error().message};
      break;
    }
    ex.bytes += a->bytes;
    ex.trees.push_back(std::move(*a));
    ex.tars.push_back(std::move(t->tar));
  }
  protocol::FileOp cleanup;  // by init's file worker; an error is ignored (the box's tmpfs goes with it)
  cleanup.op = protocol::FileOpKind::kRemove;
  cleanup.path = ex.state_path;
  (void)parent.Files(cleanup);
  if (!copied.ok()) return copied.error();
  return ex;
}

Result<std::vector<UnpackedArchive>> ReadForkTrees(const Policy& policy, const std::vector<std::string>& tars,
                                                   const ArchiveLimits& archive) {
  if (tars.size() != policy.tmpfs.size())
    return Error{ErrorCode::kInvalidArgument, "the saved files name " + std::to_string(tars.size()) +
                                                  " writable paths; policy '" + policy.name + "' has " +
                                                  std::to_string(policy.tmpfs.size()) + " now"};
  std::vector<UnpackedArchive> trees;
  for (size_t i = 0; i < tars.size(); ++i) {
    LSB_ASSIGN_OR_RETURN(UnpackedArchive a, ReadArchive(tars[i], policy.tmpfs[i].path, archive));
    trees.push_back(std::move(a));
  }
  return trees;
}

Result<ForkImport> ImportFork(Session& child, const ForkExport& state) {
  for (const auto& t : state.trees) LSB_TRY(child.PutArchive(t));
  // src/inbox/fork_import.py, in the child's globals: the imports, the modules, the values; then the report.
  LSB_ASSIGN_OR_RETURN(json report, RunSnippet(child, WithPath(inbox::ForkImportSource(), state.state_path),
                                               "fork: loading the state"));
  return ForkImport{StringsAt(report, "failed")};
}

}  // namespace lsb::sched
