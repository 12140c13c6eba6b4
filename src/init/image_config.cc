#include "init/image_config.h"

#include <sys/stat.h>

#include "policy/env_rules.h"

namespace lsb::init {

std::map<std::string, std::string> RunEnvironment(const std::map<std::string, std::string>& run_env,
                                                  const std::vector<std::string>& image_env, const std::string& home,
                                                  const std::function<void(const std::string&)>& warn) {
  std::map<std::string, std::string> env = run_env;
  // The image's variables have a budget of their own, as large as the run's (the run's was
  // checked on the host and at Run): a hostile image cannot make the environment unbounded.
  size_t image_vars = 0, image_bytes = 0;
  for (const auto& kv : image_env) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) continue;  // config.Env entries are KEY=VALUE
    std::string name = kv.substr(0, eq), value = kv.substr(eq + 1);
    if (env.count(name)) continue;  // the policy or the request set it: theirs wins
    if (auto refused = env::Refuse(name, value, env::Source::kRequest)) {
      warn("image config Env " + name + " left out: " + refused->why);
      continue;
    }
    if (image_vars + 1 > env::kEnvLimits.max_vars ||
        image_bytes + kv.size() + 1 > env::kEnvLimits.max_total_bytes) {
      warn("image config Env: the variables from " + name + " on left out: past " +
           std::to_string(env::kEnvLimits.max_vars) + " variables or " +
           std::to_string(env::kEnvLimits.max_total_bytes) + " bytes");
      break;
    }
    ++image_vars;
    image_bytes += kv.size() + 1;
    env.emplace(std::move(name), std::move(value));
  }
  env.emplace("PATH", "/usr/local/bin:/usr/bin:/bin");
  env.emplace("HOME", home);
  return env;
}

std::string RunWorkdir(const std::string& run_workdir, const std::string& image_workdir) {
  if (image_workdir.empty() || image_workdir[0] != '/') return run_workdir;
  struct stat st;
  if (::stat(image_workdir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return run_workdir;
  return image_workdir;
}

}  // namespace lsb::init
