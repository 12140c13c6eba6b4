// --max-body and --max-file agree (server/body_limits.h): the documented 16 MiB file must fit in
// the default body as base64, and an explicit pair that cannot is refused.
#include <gtest/gtest.h>

#include "server/body_limits.h"

namespace lsb::server {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

TEST(BodyLimits, DefaultBodyCarriesADefaultFileAsBase64) {
  auto l = ReconcileBodyLimits(std::nullopt, std::nullopt, 16 * kMiB);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->max_file, 16 * kMiB);
  EXPECT_GE(l->max_body, (16 * kMiB + 2) / 3 * 4);
  EXPECT_EQ(l->max_body, BodyBytesForFile(16 * kMiB));
  EXPECT_GT(l->max_body, 10 * kMiB);  // the old default could not carry it
}

TEST(BodyLimits, ASmallFileKeepsTheTenMiBFloor) {
  auto l = ReconcileBodyLimits(std::nullopt, 64 << 10, 16 * kMiB);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->max_body, kMinDefaultBodyBytes);
  EXPECT_EQ(l->max_file, 64u << 10);
}

TEST(BodyLimits, AnInconsistentPairIsRefusedNamingBoth) {
  auto l = ReconcileBodyLimits(1 * kMiB, 16 * kMiB, 16 * kMiB);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.error().message.find("--max-body"), std::string::npos);
  EXPECT_NE(l.error().message.find("--max-file"), std::string::npos);
  EXPECT_TRUE(ReconcileBodyLimits(BodyBytesForFile(16 * kMiB), 16 * kMiB, 16 * kMiB).ok());
}

TEST(BodyLimits, OnlyABodyLimitLowersTheFileLimitToWhatFits) {
  auto l = ReconcileBodyLimits(256 << 10, std::nullopt, 16 * kMiB);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->max_body, 256u << 10);
  EXPECT_LE(BodyBytesForFile(l->max_file), 256u << 10);
  EXPECT_FALSE(l->note.empty());
  auto big = ReconcileBodyLimits(64 * kMiB, std::nullopt, 16 * kMiB);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->max_file, 16 * kMiB);
  EXPECT_TRUE(big->note.empty());
}

}  // namespace
}  // namespace lsb::server
