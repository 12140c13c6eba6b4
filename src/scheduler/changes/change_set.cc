#include "scheduler/changes/change_set.h"

#include <fnmatch.h>

#include <algorithm>
#include <charconv>
#include <set>

#include "scheduler/changes/git_binary.h"
#include "runtime/box_files.h"
#include "scheduler/sandbox_path.h"
#include "scheduler/changes/unified_diff.h"
#include "scheduler/workspace_io.h"

namespace lsb::sched {
namespace {

using json = nlohmann::json;
constexpr uint64_t kOpTimeoutMs = 60000;
constexpr char kStagePrefix[] = ".lsb-outputs-";  // rich_outputs.h: not the program's change

bool Under(const std::string& path, const std::string& root) {
  return path.size() > root.size() + 1 && path.compare(0, root.size(), root) == 0 && path[root.size()] == '/';
}

Result<ManifestEntry> ParseEntry(char kind, const std::string& data) {
  const Error bad{"the box's file worker sent a malformed manifest"};
  size_t nl = data.find('\n');
  if (nl == std::string::npos || nl > 100) return bad;
  std::string head = data.substr(0, nl);
  size_t s1 = head.find(' '), s2 = head.rfind(' ');
  if (s1 == std::string::npos || s2 == s1) return bad;
  ManifestEntry e;
  e.kind = kind;
  auto [p1, ec1] = std::from_chars(head.data(), head.data() + s1, e.mode, 8);
  auto [p2, ec2] = std::from_chars(head.data() + s1 + 1, head.data() + s2, e.size);
  if (ec1 != std::errc() || ec2 != std::errc() || p1 != head.data() + s1 || p2 != head.data() + s2 || e.mode > 07777)
    return bad;
  e.sha256 = head.substr(s2 + 1);
  e.data = data.substr(nl + 1);
  if ((kind == 'f' || kind == 'l') && e.data.size() != e.size) return bad;
  if (kind != 'f' && kind != 'l' && !e.data.empty()) return bad;
  return e;
}

// Git's quoting of a name that has control, quote, backslash or non-ASCII bytes (core.quotePath).
std::string GitName(const std::string& prefix, const std::string& rel) {
  std::string name = prefix + rel;
  bool quote = false;
  for (unsigned char c : name)
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') quote = true;
  if (!quote) return name;
  std::string out = "\"";
  for (unsigned char c : name) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          char buf[5];
          std::snprintf(buf, sizeof buf, "\\%03o", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

const char* KindName(char k) {
  switch (k) {
    case 'd': return "directory";
    case 'l': return "symlink";
    case 'o': return "other";
    default: return "file";
  }
}

bool IsFile(const ManifestEntry& e) { return e.kind == 'f' || e.kind == 'h'; }

// Git's modes: 100644/100755 by the owner's execute bit, 120000 for a link.
std::string GitMode(const ManifestEntry& e) { return e.kind == 'l' ? "120000" : (e.mode & 0100) ? "100755" : "100644"; }

std::string Octal(uint32_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", mode);
  return buf;
}

// Git's heuristic: a NUL in the first 8000 bytes.
bool IsBinary(const std::string& data) { return data.find('\0', 0) < std::min<size_t>(data.size(), 8000); }

class Builder {
 public:
  Builder(const std::string& root, const ChangesLimits& limits) : root_(root), limits_(limits) {}

  std::string Rel(const std::string& path) const { return root_ == "/" ? path.substr(1) : path.substr(root_.size() + 1); }

  // One change: its entry, and its part of the patch when the patch can carry it.
  void Add(const std::string& change, const std::string& path, const ManifestEntry* before, const ManifestEntry* after,
           const std::string& old_path = "") {
    if (files_.size() >= limits_.max_listed) {
      ++unlisted_;
      return;
    }
    const ManifestEntry& e = after ? *after : *before;
    json f = {{"path", path}, {"change", change}, {"kind", KindName(e.kind)}};
    if (!old_path.empty()) f["old_path"] = old_path;
    if (after) f["mode"] = Octal(after->mode);
    if (before && after && before->mode != after->mode) f["old_mode"] = Octal(before->mode);
    if (e.kind != 'd' && e.kind != 'o') f["size"] = e.size;
    if (e.kind == 'd' || e.kind == 'o') {
      files_.push_back(std::move(f));  // git has no directories: listed only
      return;
    }
    std::string why;
    std::string part = Patch(change, path, before, after, old_path, &why, f);
    if (!why.empty()) {
      f["omitted"] = why;
      complete_ = false;
    } else if (patch_.size() + part.size() > limits_.max_patch_bytes) {
      f.erase("diff");
      f["omitted"] = "the patch reached its bound of " + std::to_string(limits_.max_patch_bytes) + " bytes";
      complete_ = false;
    } else {
      patch_ += part;
    }
    files_.push_back(std::move(f));
  }

  json Finish() {
    json j = {{"root", root_}, {"files", std::move(files_)}, {"patch", patch_}, {"complete", complete_ && unlisted_ == 0}};
    if (unlisted_) j["unlisted"] = unlisted_;
    return j;
  }

 private:
  std::string Patch(const std::string& change, const std::string& path, const ManifestEntry* before,
                    const ManifestEntry* after, const std::string& old_path, std::string* why, json& f) {
    std::string a = GitName("a/", Rel(old_path.empty() ? path : old_path)), b = GitName("b/", Rel(path));
    std::string out = "diff --git " + a + " " + b + "\n";
    if (!before) out += "new file mode " + GitMode(*after) + "\n";
    if (!after) out += "deleted file mode " + GitMode(*before) + "\n";
    if (before && after && GitMode(*before) != GitMode(*after))
      out += "old mode " + GitMode(*before) + "\nnew mode " + GitMode(*after) + "\n";
    if (change == "renamed") {
      out += "similarity index 100%\nrename from " + GitName("", Rel(old_path)) + "\nrename to " + GitName("", Rel(path)) + "\n";
      return out;
    }
    if (change == "mode_changed") return out;
    bool kept = (!before || before->kind != 'h') && (!after || after->kind != 'h');
    if (!kept) {
      *why = "no diff: a side is over " + std::to_string(limits_.max_file_bytes) + " bytes (or the manifest's budget)";
      return "";
    }
    const std::string& old_data = before ? before->data : std::string();
    const std::string& new_data = after ? after->data : std::string();
    if (IsBinary(old_data) || IsBinary(new_data)) {
      // git apply checks the preimage by its full blob id, then writes the literal.
      f["binary"] = true;
      const std::string zero(40, '0');
      out += "index " + (before ? GitBlobId(old_data) : zero) + ".." + (after ? GitBlobId(new_data) : zero);
      if (before && after && GitMode(*before) == GitMode(*after)) out += " " + GitMode(*after);
      out += "\nGIT binary patch\n" + GitBinaryLiteral(new_data);
      return out;
    }
    DiffLimits dl;
    auto hunks = UnifiedHunks(old_data, new_data, dl);
    if (!hunks) {
      *why = "no diff: more than " + std::to_string(dl.max_edits) + " lines changed";
      return "";
    }
    if (hunks->empty()) return out;  // an empty file added or deleted
    f["diff"] = *hunks;
    out += "--- " + (before ? a : std::string("/dev/null")) + "\n+++ " + (after ? b : std::string("/dev/null")) + "\n";
    return out + *hunks;
  }

  std::string root_;
  const ChangesLimits& limits_;
  json files_ = json::array();
  std::string patch_;
  bool complete_ = true;
  uint64_t unlisted_ = 0;
};

}  // namespace

std::vector<std::string> ChangeRoots(const Policy& policy, const std::string& asked) {
  if (!asked.empty()) return {asked};
  return WritableDirs(policy);
}

Result<Manifest> ManifestFromBox(BoxSession& box, const std::vector<std::string>& roots, const ChangesLimits& limits) {
  protocol::FileOp op;
  op.op = protocol::FileOpKind::kManifest;
  op.patterns = roots;
  op.max_entries = limits.max_entries;
  op.max_file_bytes = limits.max_file_bytes;
  op.max_bytes = limits.max_total_bytes;
  op.skip_prefix = kStagePrefix;
  op.timeout_ms = kOpTimeoutMs;
  op.reply_cap = limits.max_total_bytes + limits.max_entries * (4096 + 256);
  LSB_ASSIGN_OR_RETURN(FileCall r, CallFileOp(box, op));
  if (r.reply.status == protocol::FileStatus::kTooLarge)
    return Error{ErrorCode::kResourceExhausted, "changes: " + r.reply.message.substr(0, 500)};
  if (r.reply.status != protocol::FileStatus::kOk)
    return Error{"changes: the manifest failed in the box: " + r.reply.message.substr(0, 500)};
  LSB_ASSIGN_OR_RETURN(auto recs, ParseRecords(r.data, limits.max_entries));
  Manifest m;
  uint64_t kept = 0;
  for (auto& rec : recs) {
    bool inside = false;
    for (const auto& root : roots) inside = inside || Under(rec.path, root) || (root == "/" && rec.path.size() > 1);
    if (!IsNormalizedAbsolute(rec.path) || !inside || std::string("dfhlo").find(rec.kind) == std::string::npos)
      return Error{"changes: the box's file worker sent a path outside what was asked for"};
    LSB_ASSIGN_OR_RETURN(ManifestEntry e, ParseEntry(rec.kind, rec.data));
    if ((kept += e.data.size()) > limits.max_total_bytes || (e.kind == 'f' && e.size > limits.max_file_bytes))
      return Error{"changes: the box's file worker sent more than the manifest's budget"};
    m[rec.path] = std::move(e);
  }
  return m;
}

Manifest WithoutIgnored(const Manifest& m, const std::string& root, const std::vector<std::string>& patterns) {
  if (patterns.empty()) return m;
  const size_t skip = root == "/" ? 1 : root.size() + 1;
  Manifest out;
  for (const auto& [path, e] : m) {
    bool ignored = false;
    for (size_t at = std::min(skip, path.size()); at < path.size() && !ignored;) {
      size_t end = path.find('/', at);
      const std::string part = path.substr(at, end == std::string::npos ? std::string::npos : end - at);
      for (const auto& p : patterns) ignored = ignored || ::fnmatch(p.c_str(), part.c_str(), FNM_PERIOD) == 0;
      at = end == std::string::npos ? path.size() : end + 1;
    }
    if (!ignored) out.emplace(path, e);
  }
  return out;
}

json DiffManifests(const Manifest& before, const Manifest& after, const std::string& root, const ChangesLimits& limits) {
  Builder out(root, limits);
  std::vector<std::string> deleted, added;
  for (const auto& [p, e] : before) {
    auto it = after.find(p);
    if (it == after.end() || it->second.kind != e.kind || (IsFile(e) != IsFile(it->second))) deleted.push_back(p);
  }
  for (const auto& [p, e] : after) {
    auto it = before.find(p);
    if (it == before.end() || it->second.kind != e.kind || (IsFile(e) != IsFile(it->second))) added.push_back(p);
  }
  // Exact renames: a deleted and an added file of the same (non-empty) content, paired once each.
  std::map<std::string, std::string> renamed_from;  // new path -> old path
  std::set<std::string> renamed_old;
  std::multimap<std::string, std::string> by_hash;  // deleted files' sha -> path
  for (const auto& p : deleted) {
    const auto& e = before.at(p);
    if (IsFile(e) && e.size > 0) by_hash.emplace(e.sha256, p);
  }
  for (const auto& p : added) {
    const auto& e = after.at(p);
    if (!IsFile(e) || e.size == 0) continue;
    auto it = by_hash.find(e.sha256);
    if (it == by_hash.end()) continue;
    renamed_from[p] = it->second;
    renamed_old.insert(it->second);
    by_hash.erase(it);
  }
  // Deletions first (a file replaced by a directory must go before its children arrive), then the
  // rest in path order.
  for (const auto& p : deleted)
    if (!renamed_old.count(p)) out.Add("deleted", p, &before.at(p), nullptr);
  for (const auto& [p, e] : after) {
    auto rn = renamed_from.find(p);
    if (rn != renamed_from.end()) {
      out.Add("renamed", p, &before.at(rn->second), &e, rn->second);
      continue;
    }
    auto it = before.find(p);
    bool is_new = it == before.end() || it->second.kind != e.kind || IsFile(e) != IsFile(it->second);
    if (is_new) {
      out.Add("added", p, nullptr, &e);
      continue;
    }
    const ManifestEntry& old = it->second;
    if (old.sha256 != e.sha256 || old.size != e.size) out.Add("modified", p, &old, &e);
    else if (old.mode != e.mode) out.Add("mode_changed", p, &old, &e);
  }
  return out.Finish();
}

}  // namespace lsb::sched
