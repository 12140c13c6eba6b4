#include "policy/yaml_reader.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "policy/suggest.h"

namespace lsb {

YAML::Mark Field::mark() const {
  if (value && value.IsDefined() && !value.IsNull() && !value.Mark().is_null()) return value.Mark();
  return key.Mark();
}

YamlReader::YamlReader(std::string file, std::string_view source) : file_(std::move(file)) {
  size_t start = 0;
  while (start <= source.size()) {
    size_t nl = source.find('\n', start);
    if (nl == std::string_view::npos) nl = source.size();
    lines_.emplace_back(source.substr(start, nl - start));
    start = nl + 1;
  }
}

SourcePos YamlReader::Pos(const YAML::Mark& mark) const {
  if (mark.is_null()) return SourcePos{file_, 1, 1};
  return SourcePos{file_, mark.line + 1, mark.column + 1};
}

void YamlReader::Report(const YAML::Mark& mark, std::string message, std::string hint) {
  Report(Pos(mark), std::move(message), std::move(hint));
}

void YamlReader::Report(SourcePos pos, std::string message, std::string hint) {
  diagnostics_.push_back(PolicyDiagnostic{std::move(pos), std::move(message), std::move(hint)});
}

std::string YamlReader::KindOf(const YAML::Node& node) {
  if (!node || node.IsNull()) return "nothing";
  if (node.IsMap()) return "a mapping";
  if (node.IsSequence()) return "a list";
  return "the value '" + node.Scalar() + "'";
}

bool YamlReader::IsMapping(const Field& f) {
  if (f.value.IsMap()) return true;
  Report(f.mark(), f.path + ": expected a mapping of keys, got " + KindOf(f.value),
         "indent the keys of '" + f.path + "' under it, one 'key: value' per line (docs/policy.md)");
  return false;
}

void YamlReader::ForEachKnownKey(const Field& map, const std::vector<std::string>& known,
                                 const std::function<void(const Field&)>& fn, const Misspelled& misspelled) {
  if (!IsMapping(map)) return;
  std::map<std::string, YAML::Mark> seen;
  std::string prefix = map.path.empty() ? "" : map.path + ".";
  std::string where = map.path.empty() ? "at the top level" : "in '" + map.path + "'";
  for (YAML::const_iterator it = map.value.begin(); it != map.value.end(); ++it) {
    // Copies: the iterator hands out a temporary pair.
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar()) {
      Report(key.Mark(), "a key " + where + " must be a plain word, got " + KindOf(key),
             "known keys " + where + ": " + JoinList(known));
      continue;
    }
    const std::string& name = key.Scalar();
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string guess = ClosestMatch(name, known);
      std::string note = guess.empty() || !misspelled ? "" : misspelled(guess, Field{prefix + guess, key, value});
      Report(key.Mark(), "unknown key '" + name + "' " + where,
             (guess.empty() ? std::string() : "did you mean '" + guess + "'? ") + "known keys " + where +
                 ": " + JoinList(known) + note);
      continue;
    }
    auto [prev, inserted] = seen.emplace(name, key.Mark());
    if (!inserted) {
      Report(key.Mark(), "key '" + prefix + name + "' is given twice (first at " + Pos(prev->second).ToString() + ")",
             "keep one of the two; YAML would silently use only one of them");
      continue;
    }
    fn(Field{prefix + name, key, value});
  }
}

void YamlReader::ForEachEntry(const Field& map,
                              const std::function<void(const std::string& key, const Field&)>& fn) {
  if (!IsMapping(map)) return;
  std::map<std::string, YAML::Mark> seen;
  for (YAML::const_iterator it = map.value.begin(); it != map.value.end(); ++it) {
    // Copies: the iterator hands out a temporary pair.
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar()) {
      Report(key.Mark(), "a key in '" + map.path + "' must be a single value, got " + KindOf(key),
             "write 'KEY: VALUE' entries under '" + map.path + "'");
      continue;
    }
    auto [prev, inserted] = seen.emplace(key.Scalar(), key.Mark());
    if (!inserted) {
      Report(key.Mark(),
             "'" + key.Scalar() + "' is given twice in '" + map.path + "' (first at " + Pos(prev->second).ToString() + ")",
             "keep one of the two entries");
      continue;
    }
    fn(key.Scalar(), Field{map.path + "." + key.Scalar(), key, value});
  }
}

std::optional<std::string> YamlReader::String(const Field& f) {
  if (!f.value.IsScalar() || f.value.Scalar().empty()) {
    Report(f.mark(), f.path + ": expected a single value, got " + KindOf(f.value),
           "write '" + f.key.Scalar() + ": VALUE' on one line (docs/policy.md lists what it takes)");
    return std::nullopt;
  }
  return f.value.Scalar();
}

std::optional<bool> YamlReader::Bool(const Field& f) {
  if (f.value.IsScalar()) {
    std::string s = f.value.Scalar();
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    // Only YAML 1.2 booleans: "yes", "on" and friends are where typos hide.
    if (s == "true") return true;
    if (s == "false") return false;
  }
  Report(f.mark(), f.path + ": expected true or false, got " + KindOf(f.value),
         "write " + f.key.Scalar() + ": true  or  " + f.key.Scalar() + ": false");
  return std::nullopt;
}

std::optional<uint64_t> YamlReader::Integer(const Field& f) {
  if (f.value.IsScalar()) {
    const std::string& s = f.value.Scalar();
    if (!s.empty() && s.size() <= 18 && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); })) {
      return std::stoull(s);
    }
  }
  Report(f.mark(), f.path + ": expected a whole number, got " + KindOf(f.value),
         "write a plain number such as " + f.key.Scalar() + ": 128");
  return std::nullopt;
}

std::optional<std::vector<Field>> YamlReader::ScalarList(const Field& f) {
  if (!f.value.IsSequence()) {
    Report(f.mark(), f.path + ": expected a list, got " + KindOf(f.value),
           "write one '- ITEM' per line under '" + f.key.Scalar() + ":', or [ITEM, ITEM]");
    return std::nullopt;
  }
  std::vector<Field> items;
  bool ok = true;
  for (size_t i = 0; i < f.value.size(); ++i) {
    Field item{f.path + "[" + std::to_string(i) + "]", f.key, f.value[i]};
    if (!item.value.IsScalar() || item.value.Scalar().empty()) {
      Report(item.value.IsNull() ? f.key.Mark() : item.value.Mark(),
             f.path + ": item " + std::to_string(i + 1) + " must be a single value, got " + KindOf(item.value),
             "write each item of '" + f.path + "' as a plain string");
      ok = false;
      continue;
    }
    items.push_back(std::move(item));
  }
  if (!ok) return std::nullopt;
  return items;
}

SourcePos YamlReader::PosInScalar(const YAML::Node& scalar, size_t offset, std::string_view expect) const {
  SourcePos base = Pos(scalar.Mark());
  if (scalar.Mark().is_null() || static_cast<size_t>(scalar.Mark().line) >= lines_.size()) return base;
  const std::string& line = lines_[scalar.Mark().line];
  size_t col = static_cast<size_t>(scalar.Mark().column);
  if (col < line.size() && (line[col] == '"' || line[col] == '\'')) ++col;  // a quoted scalar
  col += offset;
  // A multi-line scalar's offset can run past its first line: then the start position is all we know.
  if (col > line.size() || line.compare(col, expect.size(), expect) != 0) return base;
  base.column = static_cast<int>(col) + 1;
  return base;
}

}  // namespace lsb
