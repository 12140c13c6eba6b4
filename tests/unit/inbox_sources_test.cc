// The embedded in-box programs (src/inbox/inbox_sources.h) are their files in src/inbox minus the
// leading comment lines, byte for byte, each followed by a NUL (cmake/embed_sources.cmake).
#include "inbox/inbox_sources.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace lsb::inbox {
namespace {

std::string FileText(const std::string& name) {
  std::ifstream f(std::string(LSB_SOURCE_DIR) + "/src/inbox/" + name, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  size_t at = 0;
  while (at < s.size() && s[at] == '#') at = s.find('\n', at) + 1;  // the header, not embedded
  return s.substr(at);
}

TEST(InboxSources, EachTextIsItsFileWithoutTheHeader) {
  const std::pair<const char*, std::string_view> kTexts[] = {
      {"python_driver.py", PythonDriverSource()},   {"rich_output.py", RichOutputSource()},
      {"one_shot_stage.py", OneShotStageSource()},  {"one_shot_prelude.py", OneShotPreludeSource()},
      {"fork_export.py", ForkExportSource()},
      {"fork_import.py", ForkImportSource()},       {"fork_server.py", ForkServerSource()},
      {"e2b_command_cell.py", E2bCommandCellSource()}, {"e2b_env.py", E2bEnvSource()},
      {"e2b_cell_error.py", E2bCellErrorSource()},  {"apt_install.sh", AptInstallSource()},
      {"build_report.py", BuildReportSource()}};
  for (const auto& [name, text] : kTexts) {
    SCOPED_TRACE(name);
    std::string want = FileText(name);
    ASSERT_FALSE(want.empty());
    EXPECT_EQ(std::string(text), want);
    EXPECT_EQ(text.data()[text.size()], '\0');  // data() is a C string (argv entries)
    EXPECT_NE(text.front(), '#');
  }
}

}  // namespace
}  // namespace lsb::inbox
