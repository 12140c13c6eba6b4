#include "scheduler/workspace_io.h"

#include <charconv>

#include "runtime/box_files.h"
#include "scheduler/sandbox_path.h"
#include "scheduler/archive/tar_writer.h"

namespace lsb::sched {
namespace {

constexpr size_t kUnpackMessageBytes = 4u << 20;  // one kUnpack's records
constexpr uint64_t kOpTimeoutMs = 60000;
using protocol::FileOp;
using protocol::FileOpKind;
using protocol::FileStatus;

void AppendRecord(std::string& out, char kind, const std::string& path, std::string_view data) {
  out += kind;
  out += " " + std::to_string(path.size()) + " " + std::to_string(data.size()) + "\n";
  out += path;
  out += data;
}

Result<uint64_t> Number(std::string_view s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return Error{"the box's file worker sent a malformed record"};
  return v;
}

}  // namespace

Result<std::vector<HelperRecord>> ParseRecords(std::string_view in, uint64_t max_records) {
  std::vector<HelperRecord> out;
  size_t at = 0;
  const Error bad{"the box's file worker sent a malformed reply"};
  while (at < in.size()) {
    if (out.size() >= max_records) return Error{"the box's file worker sent more records than asked for"};
    size_t nl = in.find('\n', at);
    if (nl == std::string_view::npos || nl - at > 48) return bad;
    std::string_view head = in.substr(at, nl - at);
    size_t sp1 = head.find(' '), sp2 = head.rfind(' ');
    if (sp1 != 1 || sp2 == sp1) return bad;
    LSB_ASSIGN_OR_RETURN(uint64_t n, Number(head.substr(sp1 + 1, sp2 - sp1 - 1)));
    LSB_ASSIGN_OR_RETURN(uint64_t m, Number(head.substr(sp2 + 1)));
    size_t body = nl + 1;
    if (n > in.size() - body || m > in.size() - body - n) return bad;
    out.push_back({head[0], std::string(in.substr(body, n)), std::string(in.substr(body + n, m))});
    at = body + n + m;
  }
  return out;
}

Status CheckCollectPatterns(const Policy& policy, const std::vector<std::string>& patterns, const CollectLimits& limits) {
  if (patterns.size() > limits.max_patterns)
    return Error::InvalidArgument("collect", "collect: " + std::to_string(patterns.size()) + " patterns; the limit is " +
                                                 std::to_string(limits.max_patterns));
  for (size_t i = 0; i < patterns.size(); ++i) {
    auto p = CheckSandboxPath(policy, patterns[i]);
    if (!p.ok()) return Error::InvalidArgument("collect", "collect[" + std::to_string(i) + "]: " + p.error().message);
  }
  return OkStatus();
}

Result<FileCall> WriteBoxFile(BoxSession& box, const std::string& path, std::string_view data) {
  FileOp op;
  op.op = FileOpKind::kWrite;
  op.path = path;
  op.timeout_ms = kOpTimeoutMs;
  op.reply_cap = 0;
  return CallFileOp(box, op, data);
}

Result<FileCall> ReadBoxFile(BoxSession& box, const std::string& path, uint64_t max_bytes) {
  FileOp op;
  op.op = FileOpKind::kRead;
  op.path = path;
  op.max_bytes = max_bytes;
  op.timeout_ms = kOpTimeoutMs;
  op.reply_cap = max_bytes;
  return CallFileOp(box, op);
}

Status UnpackIntoBox(BoxSession& box, const UnpackedArchive& archive) {
  size_t i = 0;
  while (i < archive.items.size()) {
    std::string msg;
    for (; i < archive.items.size() && (msg.empty() || msg.size() + archive.items[i].data.size() < kUnpackMessageBytes); ++i) {
      const ArchiveItem& it = archive.items[i];
      char kind = it.kind == ArchiveItem::Kind::kDir ? 'd' : it.executable ? 'x' : 'f';
      AppendRecord(msg, kind, it.path, it.data);
    }
    FileOp op;
    op.op = FileOpKind::kUnpack;
    op.timeout_ms = kOpTimeoutMs;
    op.reply_cap = 0;
    LSB_ASSIGN_OR_RETURN(FileCall r, CallFileOp(box, op, msg));
    if (r.reply.status != FileStatus::kOk)
      return Error{ErrorCode::kInvalidArgument, "the archive could not be unpacked in the box: " +
                                                    r.reply.message.substr(0, 1000) +
                                                    " (entries before it were written)"};
  }
  return OkStatus();
}

Result<std::vector<CollectedFile>> CollectFromBox(BoxSession& box, const std::vector<std::string>& patterns,
                                                  const CollectLimits& limits) {
  FileOp op;
  op.op = FileOpKind::kCollect;
  op.patterns = patterns;
  op.max_entries = limits.max_files;
  op.max_bytes = limits.max_bytes;
  op.max_file_bytes = limits.max_file_bytes;
  op.timeout_ms = kOpTimeoutMs;
  // Bytes of the files, plus each record's head, path and error text.
  op.reply_cap = limits.max_bytes + (limits.max_files + patterns.size() + 1) * (4096 + 1024);
  LSB_ASSIGN_OR_RETURN(FileCall r, CallFileOp(box, op));
  if (r.reply.status != FileStatus::kOk) return Error{"collect failed in the box: " + r.reply.message.substr(0, 1000)};
  LSB_ASSIGN_OR_RETURN(auto recs, ParseRecords(r.data, limits.max_files + patterns.size() + 1));
  std::vector<CollectedFile> out;
  uint64_t files = 0, bytes = 0;
  for (auto& rec : recs) {
    if (rec.kind == 'f') {
      // The worker shares the box with the program: hold it to the bounds it was given.
      if (!IsNormalizedAbsolute(rec.path) || ++files > limits.max_files || rec.data.size() > limits.max_file_bytes ||
          (bytes += rec.data.size()) > limits.max_bytes)
        return Error{"the box's file worker returned more than collect allows"};
      out.push_back({std::move(rec.path), std::move(rec.data), ""});
    } else if (rec.kind == 'e' || rec.kind == 'n') {
      out.push_back({std::move(rec.path), "", rec.data.empty() ? "not returned" : rec.data.substr(0, 1000)});
    } else {
      return Error{"the box's file worker sent a malformed collect reply"};
    }
  }
  return out;
}

Status TreeReplyStatus(const protocol::FileReply& r, const std::string& dir) {
  if (r.status == FileStatus::kTooLarge)
    return Error{ErrorCode::kResourceExhausted, r.message.substr(0, 1000) + "; fetch a smaller directory"};
  if (r.status == FileStatus::kNotFound || r.status == FileStatus::kNotADirectory)
    return Error{ErrorCode::kNotFound, "no directory " + dir + " in the box (" + r.message.substr(0, 500) + ")"};
  if (r.status != FileStatus::kOk) return Error{"reading " + dir + " in the box failed: " + r.message.substr(0, 1000)};
  return OkStatus();
}

Result<TreeArchive> TreeFromBox(BoxSession& box, const std::string& dir, const TreeLimits& limits) {
  FileOp op;
  op.op = FileOpKind::kTree;
  op.path = dir;
  op.max_entries = limits.max_entries;
  op.max_bytes = limits.max_bytes;
  op.timeout_ms = kOpTimeoutMs;
  op.reply_cap = limits.max_bytes + limits.max_entries * (4096 + 64);
  LSB_ASSIGN_OR_RETURN(FileCall r, CallFileOp(box, op));
  LSB_TRY(TreeReplyStatus(r.reply, dir));
  LSB_ASSIGN_OR_RETURN(auto recs, ParseRecords(r.data, limits.max_entries));
  const std::string prefix = dir == "/" ? "/" : dir + "/";
  TarWriter tar;
  TreeArchive out;
  for (const auto& rec : recs) {
    // Every name must lie below the directory asked for, normalized (no "..", no empty part).
    if (rec.path.size() <= prefix.size() || rec.path.compare(0, prefix.size(), prefix) != 0 || !IsNormalizedAbsolute(rec.path))
      return Error{"the box's file worker named a path outside " + dir};
    std::string name = rec.path.substr(prefix.size());
    switch (rec.kind) {
      case 'd': tar.Dir(name); ++out.dirs; break;
      case 'f':
      case 'x':
        if ((out.bytes += rec.data.size()) > limits.max_bytes)
          return Error{"the box's file worker sent more bytes than asked for"};
        tar.File(name, rec.data, rec.kind == 'x');
        ++out.files;
        break;
      case 's': ++out.skipped; break;
      default: return Error{"the box's file worker sent a malformed tree reply"};
    }
  }
  out.tar = std::move(tar).Finish();
  return out;
}

}  // namespace lsb::sched
