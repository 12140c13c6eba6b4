#include "base/bounded_json.h"

namespace lsb {

JsonShape ScanJsonShape(std::string_view text, size_t max_depth, size_t max_elements) {
  JsonShape shape;
  size_t depth = 0;
  bool in_string = false, escaped = false;
  bool just_opened = false;  // the last significant character was [ or {
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    if (just_opened && c != ']' && c != '}') ++shape.elements;  // a non-empty container's first element
    just_opened = false;
    switch (c) {
      case '"': in_string = true; break;
      case '[':
      case '{':
        if (++depth > shape.depth) shape.depth = depth;
        just_opened = true;
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;  // unbalanced text: the parser refuses it
        break;
      case ',': ++shape.elements; break;
      default: break;
    }
    if (shape.depth > max_depth || shape.elements > max_elements) break;
  }
  return shape;
}

ParsedJson ParseBoundedJson(std::string_view text, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes)
    return JsonError{JsonErrorKind::kTooLarge, limits.max_bytes,
                     "the JSON text is " + std::to_string(text.size()) + " bytes, more than the limit of " +
                         std::to_string(limits.max_bytes) + " bytes"};
  JsonShape shape = ScanJsonShape(text, limits.max_depth, limits.max_elements);
  if (shape.depth > limits.max_depth)
    return JsonError{JsonErrorKind::kTooDeep, limits.max_depth,
                     "the JSON value is nested deeper than the limit of " + std::to_string(limits.max_depth) +
                         " levels of [ and {"};
  if (shape.elements > limits.max_elements)
    return JsonError{JsonErrorKind::kTooManyElements, limits.max_elements,
                     "the JSON value has more than the limit of " + std::to_string(limits.max_elements) +
                         " array elements and object members"};
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.what() quotes the token last read, which can be most of the input: give the offset only.
    return JsonError{JsonErrorKind::kSyntax, 0, "not valid JSON (at byte " + std::to_string(e.byte) + ")"};
  } catch (const nlohmann::json::exception&) {
    return JsonError{JsonErrorKind::kSyntax, 0, "not valid JSON (a number out of range)"};
  }
}

std::string JsonStringOr(const nlohmann::json& obj, std::string_view key, std::string fallback) {
  if (!obj.is_object()) return fallback;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return fallback;
  return it->get<std::string>();
}

}  // namespace lsb
