// Where llm-sandbox keeps its state on this host (the audit log, the image store), first that
// applies: $LLM_SANDBOX_STATE_DIR; /var/lib/llm-sandbox for root; $XDG_STATE_HOME/llm-sandbox;
// $HOME/.local/state/llm-sandbox. "" when none applies (not root and no HOME).
#pragma once

#include <string>

#include "base/result.h"

namespace lsb {

std::string DefaultStateDir();

// A native box runs under an unprivileged host uid and opens its image's layers in the store,
// which lives in the state directory: that directory must be searchable (o+x) by other users,
// though not listable. Whoever creates it first (serve's audit log, a pull, a run) makes it 0711;
// one an older version made 0750 is given o+x when this process owns it (a root daemon). Does
// nothing for a state directory that does not exist or that another user owns. `dir` defaults
// to DefaultStateDir().
Status KeepStateDirSearchable(const std::string& dir = DefaultStateDir());

// Mode of every directory llm-sandbox creates on the way to its state: traversable, not listable.
constexpr unsigned kStateDirMode = 0711;

}  // namespace lsb
