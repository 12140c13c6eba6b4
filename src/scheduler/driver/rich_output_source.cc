// The in-box half of rich outputs (rich_outputs.h; src/inbox/rich_output.py, one_shot_stage.py and
// one_shot_prelude.py): Python run in the program's own interpreter,
// by the one-shot prelude (`python3 -c PRELUDE main.py`) and by the session driver. It imports
// no module the program did not beyond a few of the standard library's, imported at install,
// before user code (an import later would run through what the program made of builtins.exec).
// The session driver installs it at the first cell; the one-shot prelude only once the program
// imports matplotlib.pyplot (its compile and imports were ~6 ms of every print(1); see there).
// matplotlib is hooked at import (a meta path finder that patches pyplot once it loaded, and
// MPLBACKEND=Agg before it does), so a program that never imports it pays a dict lookup. Every
// entry is a JSON object {mime type: data} (binary as base64) or
// {"error": why}; the count and each entry's bytes are bounded here and again on the host.
#include "scheduler/driver/rich_outputs.h"

#include "inbox/inbox_sources.h"

namespace lsb::sched {

const std::string& RichOutputSource() {
  static const std::string s(inbox::RichOutputSource());
  return s;
}

const std::string& OneShotPreludeSource() {
  // argv: python3 [flags] -c PRELUDE STAGE TOKEN MAX_ENTRIES MAX_ENTRY_BYTES MAIN [args...]
  // RichOutputSource() and the staging go in as a string, compiled only once the program imports
  // matplotlib.pyplot (the one way a one-shot run makes outputs): their compile was ~1.5 ms of
  // every start, while a string literal costs the tokenizer one scan. They hold no ''' (the
  // RichOutputs unit tests check), so a raw triple-quoted literal carries them unchanged.
  // one_shot_stage.py: a one-shot run's entries staged as files for the host, and the trailer line
  // that counts them (entries exist only once the rich outputs were installed).
  static const std::string s = "_LSB_RICH = r'''" + RichOutputSource() + std::string(inbox::OneShotStageSource()) +
                               "'''\n" + std::string(inbox::OneShotPreludeSource());
  return s;
}

}  // namespace lsb::sched
