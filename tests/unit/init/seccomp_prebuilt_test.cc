// The build-time seccomp programs must be exactly what libseccomp compiles at run time: a box that
// loads a stale or mismatched table would run under a filter nobody reviewed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "init/seccomp_filter.h"
#include "init/seccomp_prebuilt.h"

namespace lsb::init {
namespace {

bool Same(const std::vector<sock_filter>& a, const std::vector<sock_filter>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(sock_filter)) == 0;
}

TEST(SeccompPrebuilt, CoversEveryDefaultConfiguration) {
  int found = 0;
  for (bool watched : {true, false})
    for (bool trace : {false, true})
      for (size_t i = 0; i < kPrebuiltSeccompCount; ++i) {
        const auto& p = kPrebuiltSeccomp[i];
        if (p.handoff_fd == kPrebuiltHandoffFd && p.trace_opens == trace && p.watched == watched) ++found;
      }
  EXPECT_EQ(found, 4);
}

TEST(SeccompPrebuilt, EachEntryIsWhatLibseccompCompilesNow) {
  for (size_t i = 0; i < kPrebuiltSeccompCount; ++i) {
    const auto& p = kPrebuiltSeccomp[i];
    SCOPED_TRACE("trace_opens=" + std::to_string(p.trace_opens) + " watched=" + std::to_string(p.watched));
    auto fresh = CompileSeccompPrograms(p.handoff_fd, SeccompOptions{p.trace_opens, p.watched});
    ASSERT_TRUE(fresh.ok()) << fresh.error().message;
    EXPECT_TRUE(Same(fresh->escape, {p.escape, p.escape + p.escape_len}));
    EXPECT_TRUE(Same(fresh->watch, {p.watch, p.watch + p.watch_len}));
    EXPECT_GT(p.escape_len, 100u);  // the escape surface, not an empty allow-all
    EXPECT_EQ(p.watch_len > 0, p.watched);
  }
}

TEST(SeccompPrebuilt, BuildServesTheDefaultsFromTheTableAndCompilesTheRest) {
  auto dflt = BuildSeccompPrograms(kPrebuiltHandoffFd, SeccompOptions{false, true});
  ASSERT_TRUE(dflt.ok());
  const auto& p = kPrebuiltSeccomp[0];
  ASSERT_TRUE(!p.trace_opens && p.watched);
  EXPECT_TRUE(Same(dflt->escape, {p.escape, p.escape + p.escape_len}));
  EXPECT_TRUE(Same(dflt->watch, {p.watch, p.watch + p.watch_len}));

  // Another nofile means another hand-off fd: the watch differs in that one constant.
  auto other = BuildSeccompPrograms(1024, SeccompOptions{false, true});
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(Same(other->escape, dflt->escape));
  EXPECT_FALSE(Same(other->watch, dflt->watch));
  auto has_k = [](const std::vector<sock_filter>& prog, uint32_t k) {
    return std::any_of(prog.begin(), prog.end(), [&](const sock_filter& f) { return f.k == k; });
  };
  EXPECT_TRUE(has_k(other->watch, 1024));
  EXPECT_TRUE(has_k(dflt->watch, 256));
}

}  // namespace
}  // namespace lsb::init
