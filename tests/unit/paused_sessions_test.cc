#include "scheduler/session/paused_sessions.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/random_id.h"

namespace lsb::sched {
namespace {

namespace fs = std::filesystem;

class PausedSessionsTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = fs::temp_directory_path() / RandomHex("lsb-paused-test-", 8); }
  void TearDown() override { fs::remove_all(dir_); }

  static PausedRecord Record(int n, const std::string& owner, size_t bytes = 10) {
    PausedRecord r;
    char id[32];
    std::snprintf(id, sizeof id, "ses-%016x", n);
    r.id = id;
    r.owner = owner;
    r.tars = {std::string(bytes, 'x')};
    return r;
  }
  fs::path dir_;
};

TEST_F(PausedSessionsTest, OneOwnersShareLeavesRoomForAnother) {
  PausedLimits lim;
  lim.max_records = 4;
  lim.max_per_owner = 2;
  PausedSessions p(dir_.string(), lim);
  ASSERT_TRUE(p.Save(Record(1, "a")).ok());
  ASSERT_TRUE(p.Save(Record(2, "a")).ok());
  PausedRefusal why;
  auto third = p.Save(Record(3, "a"), &why);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().code, ErrorCode::kResourceExhausted);
  EXPECT_NE(third.error().message.find("--max-paused-per-owner 2"), std::string::npos);
  EXPECT_GT(why.retry_after_s, 0u);
  EXPECT_TRUE(p.Save(Record(4, "b")).ok());
  EXPECT_EQ(p.count(), 3u);
}

TEST_F(PausedSessionsTest, BytesAreBoundedPerRecordAndInAll) {
  PausedLimits lim;
  lim.max_record_bytes = 100;
  lim.max_total_bytes = 150;
  PausedSessions p(dir_.string(), lim);
  auto big = p.Save(Record(1, "a", 101));
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("--max-paused-bytes"), std::string::npos);
  ASSERT_TRUE(p.Save(Record(2, "a", 100)).ok());
  auto over = p.Save(Record(3, "b", 100));
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.error().message.find("--max-paused-total-bytes"), std::string::npos);
}

TEST_F(PausedSessionsTest, OnlyItsOwnerRemovesARecord) {
  PausedSessions p(dir_.string(), PausedLimits{});
  ASSERT_TRUE(p.Save(Record(1, "a")).ok());
  EXPECT_FALSE(p.Remove("ses-0000000000000001", "b"));
  EXPECT_EQ(p.count(), 1u);
  EXPECT_TRUE(p.Remove("ses-0000000000000001", "a"));
  EXPECT_EQ(p.count(), 0u);
  EXPECT_FALSE(p.Remove("../etc", "a"));
}

TEST_F(PausedSessionsTest, AnExpiredRecordIsGoneAtLoadAndAtSweep) {
  PausedLimits lim;
  lim.ttl_s = 1000;
  PausedSessions p(dir_.string(), lim);
  ASSERT_TRUE(p.Save(Record(1, "a")).ok());
  ASSERT_TRUE(p.Save(Record(2, "a")).ok());
  // Age both records as a daemon restarted a day later would find them.
  for (const char* id : {"ses-0000000000000001", "ses-0000000000000002"}) {
    std::ofstream((dir_ / id / "meta.json").string(), std::ios::trunc)
        << R"({"version": 1, "id": ")" << id << R"(", "owner": "a", "trees": 1, "paused_at_unix": 1})";
  }
  auto loaded = p.Load("ses-0000000000000001", "a");
  ASSERT_TRUE(loaded.ok());
  EXPECT_FALSE(loaded->has_value());
  EXPECT_FALSE(fs::exists(dir_ / "ses-0000000000000001"));
  EXPECT_EQ(p.Sweep(), 1u);
  EXPECT_FALSE(fs::exists(dir_ / "ses-0000000000000002"));
}

}  // namespace
}  // namespace lsb::sched
