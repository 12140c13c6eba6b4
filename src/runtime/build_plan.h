// container.build's steps, the same on every backend (docs/policy.md "container.build"): apt (one
// step for the whole list), pip (one step for the whole list), each files entry, each run command, in that order; each step's cache key
// chained from the previous one, key_i = SHA-256(key_{i-1}, step i), so a changed step rebuilds
// from that step on; a files step's key holds the digest of its content (its layer tar).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/result.h"
#include "policy/policy.h"

namespace lsb {

// The repository of every derived image, in the native store and the Docker engine alike.
inline constexpr const char* kBuildImageRepository = "build.llm-sandbox.local/env";

struct BuildStep {
  std::string kind;         // apt | pip | files | run
  std::string description;  // one line for the log and errors
  std::vector<std::string> argv;
  const BuildFile* file = nullptr;
  // Image files the step writes in place rather than replaces (dpkg's locks and logs): the native
  // build box copies them up first (build_box.h). Not part of the key.
  std::vector<std::string> writable = {};
};

std::vector<BuildStep> PlanBuildSteps(const BuildSpec& b);

// The exit code of the apt step when the image has no apt-get, and the line it prints then.
inline constexpr int kAptMissingExitCode = 127;
inline constexpr const char* kAptMissingLine = "llm-sandbox: build.apt needs apt-get in the image; it has none";
// What is known of a failed step's cause, for its error: an apt step that found no apt-get names
// the image ("" otherwise).
std::string StepFailureHint(const BuildStep& s, int exit_code, const std::string& output, const std::string& image);

// What the builders remember a built spec by in memory (every step's inputs but files', whose
// content is read again each build).
std::string BuildSpecMemoKey(const BuildSpec& b);

// argv of a process in the finished environment that prints one JSON line: {"python": VERSION,
// "packages": [[NAME, VERSION], ...] (Python distributions), "apt": [[NAME, VERSION], ...] (each of
// `apt` found installed in /var/lib/dpkg/status)}; image inspect and GET /v1/policies show it.
std::vector<std::string> EnvironmentReportArgv(const std::vector<std::string>& apt);

// The report's [NAME, VERSION] lists as pairs. The image's python wrote them: an entry that is not
// two strings is left out, and anything but a list is none.
using NameVersions = std::vector<std::pair<std::string, std::string>>;
NameVersions ReadNameVersions(const nlohmann::json& list);
// [{"name", "version"}, ...]: how image inspect and GET /v1/policies show them.
nlohmann::json NameVersionObjects(const NameVersions& pairs);

// "step 2/3 (run make)"
std::string BuildStepLabel(size_t index, size_t count, const BuildStep& s);

// key_0 from the base image's identity (`scheme` tells backends apart: their bases' ids differ).
std::string BuildBaseKey(const std::string& scheme, const std::string& base_id);
// key_i; `content` is a files step's layer digest ("" for pip and run).
std::string BuildStepKey(const std::string& previous, const BuildStep& s, const std::string& content);

// The tar of one files entry (a layer: paths relative to /): the source, opened below the policy's
// directory with no symlink anywhere on the way (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS),
// under its target with its parent directories. `diff_id` gets the tar's digest.
Status WriteFilesLayer(const BuildFile& f, const std::string& policy_dir, int out_fd, std::string* diff_id);

// The last `n` bytes of a step's output, for its error.
std::string OutputTail(const std::string& s, size_t n);

}  // namespace lsb
