#include "scheduler/changes/unified_diff.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

namespace lsb::sched {
namespace {

// Lines with their newline ("" past the last newline is not a line).
std::vector<std::string_view> Lines(std::string_view s) {
  std::vector<std::string_view> out;
  size_t at = 0;
  while (at < s.size()) {
    size_t nl = s.find('\n', at);
    size_t end = nl == std::string_view::npos ? s.size() : nl + 1;
    out.push_back(s.substr(at, end - at));
    at = end;
  }
  return out;
}

enum class Op : char { kKeep = ' ', kDelete = '-', kInsert = '+' };

// Myers' greedy forward search, keeping each round's frontier to walk the path back.
std::optional<std::vector<Op>> EditScript(const std::vector<int>& a, const std::vector<int>& b, size_t max_d) {
  const long n = static_cast<long>(a.size()), m = static_cast<long>(b.size());
  const long max = std::min<long>(n + m, static_cast<long>(max_d));
  std::vector<std::vector<long>> trace;  // trace[d][k + d]: furthest x on diagonal k after d edits
  std::vector<long> v(2 * max + 3, 0);
  const long off = max + 1;
  long found = -1;
  for (long d = 0; d <= max && found < 0; ++d) {
    for (long k = -d; k <= d; k += 2) {
      long x = (k == -d || (k != d && v[off + k - 1] < v[off + k + 1])) ? v[off + k + 1] : v[off + k - 1] + 1;
      long y = x - k;
      while (x < n && y < m && a[x] == b[y]) ++x, ++y;
      v[off + k] = x;
      if (x >= n && y >= m) found = d;
    }
    trace.emplace_back(v.begin() + off - d, v.begin() + off + d + 1);
  }
  if (found < 0) return std::nullopt;
  std::vector<Op> ops;
  long x = n, y = m;
  for (long d = found; d > 0; --d) {
    const auto& prev = trace[d - 1];  // indices k + (d - 1)
    long k = x - y;
    auto at = [&](long kk) { return prev[kk + d - 1]; };
    bool down = k == -d || (k != d && at(k - 1) < at(k + 1));
    long pk = down ? k + 1 : k - 1;
    long px = at(pk), py = px - pk;
    while (x > px + (down ? 0 : 1) && y > py + (down ? 1 : 0)) ops.push_back(Op::kKeep), --x, --y;
    ops.push_back(down ? Op::kInsert : Op::kDelete);
    x = px, y = py;
  }
  while (x > 0 && y > 0) ops.push_back(Op::kKeep), --x, --y;
  std::reverse(ops.begin(), ops.end());
  return ops;
}

void Range(std::string& out, size_t start, size_t count) {
  // A range of no lines names the line before it (diff's convention; git apply relies on it).
  out += std::to_string(count == 0 ? start : start + 1);
  if (count != 1) out += "," + std::to_string(count);
}

void Line(std::string& out, char op, std::string_view line) {
  out += op;
  out += line;
  if (line.empty() || line.back() != '\n') out += "\n\\ No newline at end of file\n";
}

}  // namespace

std::optional<std::string> UnifiedHunks(std::string_view before, std::string_view after, const DiffLimits& limits) {
  if (before == after) return std::string();
  auto la = Lines(before), lb = Lines(after);
  // Lines as small ids (equal text, equal id) so the search compares ints.
  std::unordered_map<std::string_view, int> ids;
  std::vector<int> a, b;
  for (auto l : la) a.push_back(ids.emplace(l, static_cast<int>(ids.size())).first->second);
  for (auto l : lb) b.push_back(ids.emplace(l, static_cast<int>(ids.size())).first->second);
  auto ops = EditScript(a, b, limits.max_edits);
  if (!ops) return std::nullopt;
  // Each op with its position in a and b; hunks are runs of changes joined by <= 2*context keeps.
  struct At { Op op; size_t i, j; };
  std::vector<At> seq;
  size_t i = 0, j = 0;
  for (Op op : *ops) {
    seq.push_back({op, i, j});
    if (op != Op::kInsert) ++i;
    if (op != Op::kDelete) ++j;
  }
  std::string out;
  const size_t c = limits.context;
  size_t at = 0;
  while (at < seq.size()) {
    while (at < seq.size() && seq[at].op == Op::kKeep) ++at;
    if (at == seq.size()) break;
    size_t first = at >= c ? at - c : 0;
    size_t last = at;  // one past the hunk's last change
    for (size_t k = at; k < seq.size(); ++k) {
      if (seq[k].op != Op::kKeep) {
        last = k + 1;
        continue;
      }
      if (k - last >= 2 * c) break;
    }
    size_t end = std::min(seq.size(), last + c);
    size_t old_n = 0, new_n = 0;
    for (size_t k = first; k < end; ++k) {
      if (seq[k].op != Op::kInsert) ++old_n;
      if (seq[k].op != Op::kDelete) ++new_n;
    }
    out += "@@ -";
    Range(out, seq[first].i, old_n);
    out += " +";
    Range(out, seq[first].j, new_n);
    out += " @@\n";
    for (size_t k = first; k < end; ++k) {
      const At& s = seq[k];
      Line(out, static_cast<char>(s.op), s.op == Op::kInsert ? lb[s.j] : la[s.i]);
    }
    at = end;
  }
  return out;
}

}  // namespace lsb::sched
