#include "policy/units.h"

#include <gtest/gtest.h>

namespace lsb::units {
namespace {

TEST(PolicyUnits, BytesAsPeopleWriteThem) {
  EXPECT_EQ(*ParseBytes("256M"), 256ull << 20);
  EXPECT_EQ(*ParseBytes("256Mi"), 256ull << 20);
  EXPECT_EQ(*ParseBytes("256MiB"), 256ull << 20);
  EXPECT_EQ(*ParseBytes("256mb"), 256ull << 20);
  EXPECT_EQ(*ParseBytes("1G"), 1ull << 30);
  EXPECT_EQ(*ParseBytes("512k"), 512ull << 10);
  EXPECT_EQ(*ParseBytes("2T"), 2ull << 40);
  EXPECT_EQ(*ParseBytes("1.5G"), 3ull << 29);
  EXPECT_EQ(*ParseBytes("4096"), 4096u);
  EXPECT_EQ(*ParseBytes("100B"), 100u);
  EXPECT_EQ(*ParseBytes(" 64M "), 64ull << 20);
  EXPECT_EQ(*ParseBytes("0"), 0u);
}

TEST(PolicyUnits, BadBytes) {
  EXPECT_FALSE(ParseBytes("lots").ok());
  EXPECT_NE(ParseBytes("lots").error().message.find("'lots' is not a size"), std::string::npos);
  EXPECT_NE(ParseBytes("-1M").error().message.find("negative"), std::string::npos);
  EXPECT_NE(ParseBytes("10X").error().message.find("unknown size unit 'X'"), std::string::npos);
  EXPECT_NE(ParseBytes("1.5").error().message.find("fraction"), std::string::npos);
  EXPECT_FALSE(ParseBytes("").ok());
  EXPECT_FALSE(ParseBytes("1e9").ok());
  EXPECT_FALSE(ParseBytes("M").ok());
  EXPECT_FALSE(ParseBytes("99999999999T").ok());
}

// Issue 37: "256 MB" was silently 256MiB; a space between number and unit is refused, naming the
// value, the spelling to write and the accepted forms.
TEST(PolicyUnits, SpaceBeforeTheUnitIsRefused) {
  for (const char* text : {"256 MB", "256 M", "1.5 G", "100 B", "64\tKiB"}) {
    auto r = ParseBytes(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().message.find(std::string("'") + text + "' has a space"), std::string::npos)
        << r.error().message;
    EXPECT_NE(r.error().message.find("accepted:"), std::string::npos) << r.error().message;
  }
  EXPECT_NE(ParseBytes("256 MB").error().message.find("write '256MB'"), std::string::npos);
  EXPECT_NE(ParseBytes("10X").error().message.find("256M = 256Mi = 256MiB"), std::string::npos);
}

TEST(PolicyUnits, Cpu) {
  EXPECT_DOUBLE_EQ(*ParseCpu("0.5"), 0.5);
  EXPECT_DOUBLE_EQ(*ParseCpu("2"), 2.0);
  EXPECT_DOUBLE_EQ(*ParseCpu("500m"), 0.5);
  EXPECT_DOUBLE_EQ(*ParseCpu("250m"), 0.25);
  EXPECT_FALSE(ParseCpu("-1").ok());
  EXPECT_FALSE(ParseCpu("half").ok());
  EXPECT_FALSE(ParseCpu("2 cores").ok());
}

TEST(PolicyUnits, Durations) {
  EXPECT_EQ(*ParseDurationMs("30"), 30000u);
  EXPECT_EQ(*ParseDurationMs("0.5"), 500u);
  EXPECT_EQ(*ParseDurationMs("30s"), 30000u);
  EXPECT_EQ(*ParseDurationMs("500ms"), 500u);
  EXPECT_EQ(*ParseDurationMs("2m"), 120000u);
  EXPECT_EQ(*ParseDurationMs("1h"), 3600000u);
  EXPECT_EQ(*ParseDurationMs("1m30s"), 90000u);
  EXPECT_EQ(*ParseDurationMs("1.5s"), 1500u);
  EXPECT_EQ(*ParseDurationMs("30 s"), 30000u);
  EXPECT_NE(ParseDurationMs("30 sec").error().message.find("unknown time unit 'sec'"), std::string::npos);
  EXPECT_FALSE(ParseDurationMs("-5").ok());
  EXPECT_FALSE(ParseDurationMs("soon").ok());
  EXPECT_FALSE(ParseDurationMs("1m30").ok());
  EXPECT_FALSE(ParseDurationMs("").ok());
}

TEST(PolicyUnits, Formatting) {
  EXPECT_EQ(FormatBytes(256ull << 20), "256Mi");
  EXPECT_EQ(FormatBytes(3ull << 29), "1.5Gi");
  EXPECT_EQ(FormatBytes(100), "100 bytes");
  EXPECT_EQ(FormatDurationMs(30000), "30s");
  EXPECT_EQ(FormatDurationMs(90500), "1m30s500ms");
  EXPECT_EQ(FormatDurationMs(500), "500ms");
  EXPECT_EQ(FormatCpu(0.5), "0.5");
  EXPECT_EQ(FormatCpu(2), "2");
}

}  // namespace
}  // namespace lsb::units
