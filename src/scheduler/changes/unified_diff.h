// A unified diff of two texts (the change set's, change_set.h): Myers' O((N+M)D) shortest edit
// script over lines, with a bound on D so a rewrite of a large file costs bounded time and memory;
// hunks with three lines of context, "\ No newline at end of file" where a side lacks one, in the
// form `git apply` and `patch` accept.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace lsb::sched {

struct DiffLimits {
  size_t max_edits = 4000;  // D: past it, no diff (the file is listed as modified)
  size_t context = 3;
};

// The hunks ("@@ -a,b +c,d @@" and their lines) that turn `before` into `after`; "" when they are
// equal; nullopt past limits.max_edits.
std::optional<std::string> UnifiedHunks(std::string_view before, std::string_view after, const DiffLimits& limits = {});

}  // namespace lsb::sched
