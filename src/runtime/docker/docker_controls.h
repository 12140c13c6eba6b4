// How the Docker backend enforces each policy control, in words (`policy explain`), and which ones
// it cannot enforce at all (its Check refuses those, naming the control). What the engine at hand
// can do (runtimes, seccomp, root beside it) is DockerBackend::Check's to probe.
#pragma once

#include "policy/explain.h"

namespace lsb::docker {

// One answer per control: a switch with no default, so a control added to the table without an
// answer here does not compile.
Enforcement DescribeControl(const ControlRow& row, const Policy& policy);

}  // namespace lsb::docker
