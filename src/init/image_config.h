// What an image's config adds to a run (BoxSetup.image_env, image_workdir): it fills gaps the
// policy and the request leave, never replaces what they set, and passes only what a request could
// pass itself (env_rules.h, Source::kRequest: no LD_*, no interpreter start-up hooks), so an image
// cannot loosen the box. Pure; used by Supervisor::Run.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace lsb::init {

// The run's environment: `run_env` (policy + request, already checked), then each image variable
// it does not set (a refused one, or one past the image's own budget of kEnvLimits, is left out
// and reported through `warn`), then the defaults init
// always sets: PATH /usr/local/bin:/usr/bin:/bin and HOME = `home`.
std::map<std::string, std::string> RunEnvironment(const std::map<std::string, std::string>& run_env,
                                                  const std::vector<std::string>& image_env, const std::string& home,
                                                  const std::function<void(const std::string&)>& warn);

// The program's cwd: the image's WorkingDir when the backend passed one (only when the policy has
// no container.workdir) and it is a directory in the box, else the run's.
std::string RunWorkdir(const std::string& run_workdir, const std::string& image_workdir);

}  // namespace lsb::init
