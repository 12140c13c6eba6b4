// Finding a command inside the box, the one place init does it: argv[0] without a slash on the
// run's PATH, and, on an image root, a path the policy names but the image lacks by its name on
// the image's PATH (config.Env): the official Python images have /usr/local/bin/python3, not the
// /usr/bin/python3 a policy (and the python language) names. The commands allowlist
// (exec_policy.h) and the program's argv[0] (supervisor.cc) both resolve through here, in the
// box's own root, so they always name the same file.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lsb::init {

// The first DIR/name on `path_var` ("a:b:c") that is a regular file; nullopt when none.
std::optional<std::string> FindOnPath(std::string_view name, std::string_view path_var);

// The PATH an image's config.Env sets ("" when none).
std::string ImagePath(const std::vector<std::string>& image_env);

// `path` (absolute) as it is found in this root: itself when it exists, else (on an image root,
// `image_path` not empty) the command of its base name on the image's PATH, else nullopt.
std::optional<std::string> LocateCommand(const std::string& path, std::string_view image_path);

}  // namespace lsb::init
