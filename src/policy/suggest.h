// "Did you mean ...?" for misspelled keys and values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lsb {

// The candidate closest to `word` by edit distance (a swap of two neighbours counts as one edit),
// or "" when none is close enough to be a plausible typo.
std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates);

// "a, b, c"
std::string JoinList(const std::vector<std::string>& items, std::string_view separator = ", ");

}  // namespace lsb
