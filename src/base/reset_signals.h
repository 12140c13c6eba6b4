// A process about to become another program (or a confined copy of one) starts with no signal
// blocked and every disposition at its default: ignored dispositions and masks survive execve,
// and a fork inherits both. Raw calls only: for children between fork and exec and for
// liblsb-fork.so (no libstdc++).
#pragma once

namespace lsb {

void ResetSignals();

}  // namespace lsb
