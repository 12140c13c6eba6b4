// Execution history read back from the audit log (monitor/audit_log.h), newest first, one bounded
// page at a time: GET /v1/history and the dashboard's "History" (docs/monitoring.md).
//
// The files are FILE (newest), FILE.1, ... FILE.N (oldest). A page is read backwards from a
// cursor, line by line; only complete lines count ('\n'-terminated: a line cut by a crash, or being
// written, is never a record). A cursor names a file by its inode, not its name, so a rotation
// between two pages (FILE -> FILE.1) does not repeat or skip records; once its file is rotated
// away the cursor has expired. Every page is bounded: records returned, bytes of their JSON,
// bytes read from disk (a filter that matches nothing still answers quickly, with a cursor to go
// on), and the length of one line (longer ones are skipped and counted).
//
// Ownership: a record is returned only to the owner it names ("owner", absent = "" = no tokens).
// A cursor is only a position: a forged one reads records at another offset, still owner-checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "monitor/execution_filter.h"

namespace lsb::monitor {

struct HistoryCursor {
  uint64_t inode = 0;
  uint64_t offset = 0;  // the page reads the lines that end before this byte
};

// "<inode>.<offset>" in decimal; nullopt for anything else.
std::optional<HistoryCursor> ParseHistoryCursor(const std::string& text);
std::string FormatHistoryCursor(const HistoryCursor& c);

struct HistoryLimits {
  size_t page_bytes = 256u << 10;   // JSON of the executions of one page
  uint64_t scan_bytes = 8u << 20;   // read from disk for one page (then a cursor to continue)
  size_t line_bytes = 4u << 20;     // one record; longer lines are skipped (skipped_lines)
  size_t entry_bytes = 16u << 10;   // one execution's JSON (past it its alerts are cut)
  int max_files = 64;               // FILE.1 ... FILE.<max_files> at most are looked at
};

struct HistoryQuery {
  std::string owner;
  ExecutionFilter filter;
  size_t limit = 50;                    // executions per page
  std::optional<HistoryCursor> cursor;  // none: from the newest record
};

struct HistoryPage {
  std::vector<nlohmann::json> executions;  // newest first
  std::optional<HistoryCursor> next;       // the next, older page; none: the oldest was reached
  uint64_t scanned_bytes = 0;
  uint64_t skipped_lines = 0;   // lines that are not records (unparsable, or too long)
  bool cursor_expired = false;  // the cursor's file has been rotated away
};

Result<HistoryPage> ReadHistory(const std::string& path, const HistoryQuery& query, const HistoryLimits& limits = {});

// One audit execution record as a history entry: the fields of GET /v1/executions' Execution
// (usage flattened, no trace), at most `entry_bytes` of JSON; fields of the wrong type are left out.
nlohmann::json HistoryEntry(const nlohmann::json& record, size_t entry_bytes);

}  // namespace lsb::monitor
