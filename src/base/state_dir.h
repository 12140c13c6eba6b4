// Where llm-sandbox keeps its state on this host (the audit log, the image store), first that
// applies: $LLM_SANDBOX_STATE_DIR; /var/lib/llm-sandbox for root; $XDG_STATE_HOME/llm-sandbox;
// $HOME/.local/state/llm-sandbox. "" when none applies (not root and no HOME).
#pragma once

#include <string>

namespace lsb {

std::string DefaultStateDir();

}  // namespace lsb
