// A fork server's program (docs/architecture.md, "Fork server"). In a derived box, init was
// executed by a fork of the zygote's warm python, which forked once more first: that child (pid 2,
// init's own child) waits on fd 3 to become the run's program. Instead of spawning a new python,
// init hands it the run (argv and environment, as JSON) and then the same confinement a spawned
// program takes (adopt_wire.h, applied by confine.h's ConfineSelf in liblsb-fork.so), and gets
// its seccomp listener back, exactly as from Spawn.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "init/spawn.h"

namespace lsb::init {

struct Adoptee {
  UniqueFd sock;  // SOCK_SEQPACKET to the waiting program
  pid_t pid = 2;
};

// Whether `p` is what the waiting program can become: `python -c SOURCE ...` of the very
// executable it is a fork of (argv[0] resolves to its /proc/<pid>/exe), with the environment it
// started with (what python read at its start, PYTHON* and the locale, cannot change after).
// Returns "" when it is, else why not (init's diagnostics say it).
std::string WhyNotAdoptable(const SpawnParams& p, pid_t pid);

// Confines the waiting program as Spawn would confine a new one and returns it as Spawn does.
// The adoptee is used up either way.
Result<Spawned> Adopt(Adoptee adoptee, const SpawnParams& p);

}  // namespace lsb::init
