#include <gtest/gtest.h>

#include <set>

#include "base/random_id.h"

namespace lsb {
namespace {

TEST(RandomHex, PrefixThenTwoHexDigitsPerByte) {
  std::string id = RandomHex("ex-", 8);
  ASSERT_EQ(id.size(), 3u + 16u);
  EXPECT_EQ(id.substr(0, 3), "ex-");
  for (char c : id.substr(3)) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << id;
}

TEST(RandomHex, IdsDoNotRepeat) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) seen.insert(RandomHex("", 6));
  EXPECT_EQ(seen.size(), 1000u);
}

}  // namespace
}  // namespace lsb
