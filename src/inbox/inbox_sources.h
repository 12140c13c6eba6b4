// The programs that run inside a box, kept as files in src/inbox/ (one program each, with a header
// saying what runs it) and embedded at build time by cmake/embed_sources.cmake: each accessor is
// the file minus its leading comment lines, byte for byte. Each text is followed by a NUL outside
// the view, so data() is a C string. Callers put in run-time values (paths, arguments) themselves.
#pragma once
#include <string_view>

namespace lsb::inbox {

std::string_view PythonDriverSource();    // python_driver.py: the session driver
std::string_view RichOutputSource();      // rich_output.py: _lsb_rich_install
std::string_view OneShotStageSource();    // one_shot_stage.py: _lsb_stage
std::string_view OneShotPreludeSource();  // one_shot_prelude.py: the one-shot runner after _LSB_RICH
std::string_view ForkExportSource();      // fork_export.py: has %PATH%
std::string_view ForkImportSource();      // fork_import.py: has %PATH%
std::string_view ForkServerSource();      // fork_server.py: the fork server's zygote
std::string_view E2bCommandCellSource();  // e2b_command_cell.py: has ARGS
std::string_view E2bCellErrorSource();    // e2b_cell_error.py
std::string_view E2bEnvSource();          // e2b_env.py: has ARGS
std::string_view AptInstallSource();      // apt_install.sh: build.apt's step
std::string_view BuildReportSource();     // build_report.py: the built image's report
std::string_view ShellDriverSource();     // shell_driver.sh: a bash/sh session's shell
std::string_view NodeDriverSource();      // node_driver.js: a node session's context

}  // namespace lsb::inbox
