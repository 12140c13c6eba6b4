// The dashboard's history (monitor/audit_history.h) and filters (monitor/execution_filter.h) on
// real files: newest first across rotated files, paged by cursor with no record repeated or lost
// (also across a rotation between two pages), bounded in records, bytes and disk reads, owner-
// checked, and blind to a partial last line or an oversized one.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "monitor/audit_history.h"
#include "monitor/cpu_share.h"
#include "monitor/execution_filter.h"

namespace lsb::monitor {
namespace {

using nlohmann::json;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/lsb-history-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { (void)std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

json Record(int n, const std::string& owner = "", const std::string& status = "ok", const std::string& rule = "") {
  json r = {{"type", "execution"}, {"execution_id", "exec-" + std::to_string(n)}, {"policy", n % 2 ? "odd" : "even"},
            {"kind", "execute"}, {"status", status}, {"exit_code", 0},
            {"usage", {{"duration_ms", 1000}, {"cpu_ms", 500}, {"memory_peak_bytes", 1 << 20}, {"cpu_limit", 0.5}}},
            {"alerts", json::array()}};
  if (!owner.empty()) r["owner"] = owner;
  if (!rule.empty()) r["alerts"].push_back({{"kind", "x"}, {"severity", "critical"}, {"rule", rule}, {"message", "m"}});
  return r;
}

void Append(const std::string& file, const std::vector<json>& recs, const std::string& tail = "") {
  std::ofstream f(file, std::ios::app);
  for (const auto& r : recs) f << r.dump() << "\n";
  f << tail;
}

std::vector<std::string> Ids(const HistoryPage& p) {
  std::vector<std::string> ids;
  for (const auto& e : p.executions) ids.push_back(e["execution_id"]);
  return ids;
}

// Every page from the newest to the end.
std::vector<std::string> AllPages(const std::string& file, HistoryQuery q, const HistoryLimits& lim, int* pages) {
  std::vector<std::string> ids;
  *pages = 0;
  for (;;) {
    auto p = ReadHistory(file, q, lim);
    EXPECT_TRUE(p.ok()) << p.error().message;
    ++*pages;
    for (auto& id : Ids(*p)) ids.push_back(id);
    if (!p->next || *pages > 1000) return ids;
    q.cursor = p->next;
  }
}

std::vector<std::string> Expected(int from, int to) {  // exec-<to> ... exec-<from>, newest first
  std::vector<std::string> ids;
  for (int i = to; i >= from; --i) ids.push_back("exec-" + std::to_string(i));
  return ids;
}

TEST(AuditHistory, PagesNewestFirstAcrossRotatedFilesWithNothingRepeatedOrLost) {
  TempDir d;
  std::string file = d.path() + "/audit.log";
  std::vector<json> older, old, now;
  for (int i = 0; i < 40; ++i) older.push_back(Record(i));
  for (int i = 40; i < 90; ++i) old.push_back(Record(i));
  for (int i = 90; i < 130; ++i) now.push_back(Record(i));
  Append(file + ".2", older);
  Append(file + ".1", old);
  Append(file, now);
  HistoryQuery q;
  q.limit = 50;
  int pages = 0;
  EXPECT_EQ(AllPages(file, q, {}, &pages), Expected(0, 129));
  EXPECT_EQ(pages, 3);
  auto first = ReadHistory(file, q);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->executions.size(), 50u);
  EXPECT_EQ(first->executions[0]["execution_id"], "exec-129");
  // Usage is flattened and CPU is relative to the limit: 500 ms of CPU over 1000 ms at 0.5 cores.
  EXPECT_EQ(first->executions[0]["duration_ms"], 1000);
  EXPECT_DOUBLE_EQ(first->executions[0]["cpu_percent_of_limit"].get<double>(), 100.0);
  EXPECT_FALSE(first->executions[0].contains("usage"));
}

TEST(AuditHistory, ARotationBetweenTwoPagesNeitherRepeatsNorSkips) {
  TempDir d;
  std::string file = d.path() + "/audit.log";
  std::vector<json> recs;
  for (int i = 0; i < 30; ++i) recs.push_back(Record(i));
  Append(file, recs);
  HistoryQuery q;
  q.limit = 10;
  auto p1 = ReadHistory(file, q);
  ASSERT_TRUE(p1.ok());
  EXPECT_EQ(Ids(*p1), Expected(20, 29));
  // The daemon rotates (FILE -> FILE.1) and writes more: the cursor follows the file, not its name.
  ASSERT_EQ(::rename(file.c_str(), (file + ".1").c_str()), 0);
  Append(file, {Record(30), Record(31)});
  q.cursor = p1->next;
  q.limit = 100;
  auto p2 = ReadHistory(file, q);
  ASSERT_TRUE(p2.ok());
  EXPECT_EQ(Ids(*p2), Expected(0, 19));
  EXPECT_FALSE(p2->next);
  // Rotated away altogether: the cursor has expired (an empty page that says so).
  ASSERT_EQ(::unlink((file + ".1").c_str()), 0);
  auto p3 = ReadHistory(file, q);
  ASSERT_TRUE(p3.ok());
  EXPECT_TRUE(p3->cursor_expired);
  EXPECT_TRUE(p3->executions.empty());
}

TEST(AuditHistory, OnlyTheOwnersRecordsAndOnlyExecutionsThatMatchTheFilter) {
  TempDir d;
  std::string file = d.path() + "/audit.log";
  Append(file, {Record(1, "tok-alice"), Record(2, "tok-bob"), Record(3), Record(4, "tok-alice", "timeout"),
                Record(5, "tok-alice", "ok", "network_attempt"),
                json{{"type", "alert"}, {"execution_id", "exec-5"}, {"rule", "network_attempt"}, {"owner", "tok-alice"}}});
  HistoryQuery q;
  q.owner = "tok-alice";
  auto all = ReadHistory(file, q);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(Ids(*all), (std::vector<std::string>{"exec-5", "exec-4", "exec-1"}));
  q.owner = "";  // the no-token user is an owner too, not a wildcard
  EXPECT_EQ(Ids(*ReadHistory(file, q)), (std::vector<std::string>{"exec-3"}));
  q.owner = "tok-alice";
  q.filter.status = "timeout";
  EXPECT_EQ(Ids(*ReadHistory(file, q)), (std::vector<std::string>{"exec-4"}));
  q.filter = {};
  q.filter.rule = "network_attempt";
  EXPECT_EQ(Ids(*ReadHistory(file, q)), (std::vector<std::string>{"exec-5"}));
  q.filter = {};
  q.filter.policy = "odd";
  EXPECT_EQ(Ids(*ReadHistory(file, q)), (std::vector<std::string>{"exec-5", "exec-1"}));
}

TEST(AuditHistory, APartialLastLineAGarbageLineAndAnOversizedLineAreNotRecords) {
  TempDir d;
  std::string file = d.path() + "/audit.log";
  Append(file, {Record(1)});
  Append(file, {}, "not json\n" + std::string(3000, 'x') + "\n");
  Append(file, {Record(2)}, Record(3).dump().substr(0, 40));  // a crash cut the last write
  HistoryQuery q;
  HistoryLimits lim;
  lim.line_bytes = 1000;
  auto p = ReadHistory(file, q, lim);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(Ids(*p), (std::vector<std::string>{"exec-2", "exec-1"}));
  EXPECT_EQ(p->skipped_lines, 2u);
}

TEST(AuditHistory, EveryPageIsBoundedInRecordsBytesAndDiskReads) {
  TempDir d;
  std::string file = d.path() + "/audit.log";
  std::vector<json> recs;
  for (int i = 0; i < 2000; ++i) recs.push_back(Record(i, i % 100 == 0 ? "tok-rare" : ""));
  Append(file, recs);
  HistoryLimits lim;
  lim.page_bytes = 4096;
  HistoryQuery q;
  q.limit = 200;
  auto p = ReadHistory(file, q, lim);
  ASSERT_TRUE(p.ok());
  size_t bytes = 0;
  for (const auto& e : p->executions) bytes += e.dump().size();
  EXPECT_LE(bytes, 4096u);
  EXPECT_GT(p->executions.size(), 5u);
  EXPECT_TRUE(p->next);
  int pages = 0;
  EXPECT_EQ(AllPages(file, q, lim, &pages).size(), 1980u);  // all but tok-rare's 20

  // A filter that matches rarely: each page reads at most scan_bytes (+ one chunk) and says where
  // to go on; all 20 records still come, in order.
  lim = {};
  lim.scan_bytes = 128 << 10;  // of a 400 KiB file
  q = {};
  q.owner = "tok-rare";
  auto rare = ReadHistory(file, q, lim);
  ASSERT_TRUE(rare.ok());
  EXPECT_LE(rare->scanned_bytes, (128u << 10) + (64u << 10));
  EXPECT_TRUE(rare->next);
  std::vector<std::string> ids = AllPages(file, q, lim, &pages);
  EXPECT_EQ(ids.size(), 20u);
  EXPECT_EQ(ids.front(), "exec-1900");
  EXPECT_EQ(ids.back(), "exec-0");
  EXPECT_GT(pages, 2);
}

TEST(AuditHistory, ACursorIsTwoNumbersAndNothingElse) {
  auto c = ParseHistoryCursor("123.456");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->inode, 123u);
  EXPECT_EQ(c->offset, 456u);
  EXPECT_EQ(FormatHistoryCursor(*c), "123.456");
  for (const char* bad : {"", ".", "1.", ".1", "1.2.3", "-1.2", "1.-2", "a.b", "1 .2", "99999999999999999999.1"})
    EXPECT_FALSE(ParseHistoryCursor(bad)) << bad;
}

TEST(ExecutionFilters, UnknownValuesAreRefusedListingTheValidOnes) {
  auto choices = BuiltinFilterChoices({"code-sandbox", "bash-tools"});
  auto bad_status = MakeExecutionFilter("", "bogus", "", choices);
  ASSERT_FALSE(bad_status.ok());
  EXPECT_NE(bad_status.error().message.find("status: 'bogus' is not one of ok, error, timeout"), std::string::npos)
      << bad_status.error().message;
  EXPECT_NE(bad_status.error().message.find("sandbox_error"), std::string::npos);
  auto bad_rule = MakeExecutionFilter("", "", "netwrk_attempt", choices);
  ASSERT_FALSE(bad_rule.ok());
  EXPECT_NE(bad_rule.error().message.find("network_attempt"), std::string::npos) << bad_rule.error().message;
  auto bad_policy = MakeExecutionFilter("nope", "", "", choices);
  ASSERT_FALSE(bad_policy.ok());
  EXPECT_NE(bad_policy.error().message.find("policy: 'nope' is not one of code-sandbox, bash-tools"), std::string::npos);
  auto good = MakeExecutionFilter("bash-tools", "oom", "oom_kill", choices);
  ASSERT_TRUE(good.ok());
  json e = {{"policy", "bash-tools"}, {"status", "oom"}, {"alerts", {{{"rule", "oom_kill"}}}}};
  EXPECT_TRUE(good->Matches(e));
  e["alerts"] = json::array();
  EXPECT_FALSE(good->Matches(e));
  e["policy"] = 42;  // a field of the wrong type does not match, and does not throw
  EXPECT_FALSE((ExecutionFilter{"bash-tools", "", ""}.Matches(e)));
}

TEST(CpuShare, CpuPercentIsRelativeToThePolicysCpuLimit) {
  EXPECT_DOUBLE_EQ(*CpuPercentOfLimit(500, 1000, 0.5), 100.0);
  EXPECT_DOUBLE_EQ(*CpuPercentOfLimit(500, 1000, 2), 25.0);
  EXPECT_FALSE(CpuPercentOfLimit(500, 0, 1));
  EXPECT_DOUBLE_EQ(CpuLimitCores(1.5), 1.5);
  EXPECT_DOUBLE_EQ(CpuLimitCores(0), static_cast<double>(::sysconf(_SC_NPROCESSORS_ONLN)));
}

}  // namespace
}  // namespace lsb::monitor
