// llm-sandbox policy check FILE... | policy explain [--json] FILE|NAME | policy controls [--json]
#include <sys/stat.h>

#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "policy/controls.h"
#include "runtime/policy_explain.h"
#include "policy/policy_loader.h"
#include "image/store_puller.h"
#include "runtime/image_map.h"
#include "runtime/native/workdir_check.h"

namespace lsb::cli {
namespace {

constexpr const char* kUsage =
    "usage: llm-sandbox policy check FILE|NAME...\n"
    "       llm-sandbox policy explain [--json] FILE|NAME\n"
    "       llm-sandbox policy controls [--json]\n"
    "\n"
    "  check     validate policies: prints 'ok: NAME (FILE)' for each good one; every error goes to\n"
    "            stderr as FILE:LINE:COLUMN: message, with a hint. Exit 0 if all are valid, 1 if not.\n"
    "  explain   print, for each control, its setting and how the native and the Docker backend\n"
    "            enforce it, or why they cannot. --json prints the same as JSON.\n"
    "  controls  list every control a policy can set: its key, default, whether a request may lower\n"
    "            it, and what it is (a Markdown table; --json: the same as JSON).\n"
    "\n"
    "check also looks for container.workdir in the image's root (the image map, then the image store;\n"
    "nothing is pulled) and the policy's tmpfs and mounts; an image it cannot inspect is named on stderr.\n"
    "A NAME (no '/', no .yaml) is looked up as NAME.yaml in $LLM_SANDBOX_POLICY_DIR (colon-separated),\n"
    "./policies and /etc/llm-sandbox/policies. Every field is documented in docs/policy.md.\n";

int Usage(const std::string& problem) {
  std::fprintf(stderr, "llm-sandbox policy: %s\n\n%s", problem.c_str(), kUsage);
  return 2;
}

bool IsHelp(const std::string& a) { return a == "--help" || a == "-h"; }

// The native box's root for `policy`, without pulling or creating a store (a check changes nothing).
Result<native::BoxRoot> RootForCheck(const Policy& policy) {
  if (policy.backend == BackendKind::kDocker)
    return Error{"backend: docker, so the image is the Docker engine's, which policy check does not inspect"};
  LSB_ASSIGN_OR_RETURN(ImageMap map, ImageMap::Load());
  std::unique_ptr<image::SharedStore> store;
  if (auto opts = image::StoreOptionsFor(""); opts.ok()) {
    struct stat st;
    if (::stat(opts->root.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      store = std::make_unique<image::SharedStore>(*opts);
  }
  auto root = native::ResolveBoxRoot(policy.image, policy.pull, native::RootSources{map, store.get(), nullptr}, false);
  if (!root.ok() && policy.backend == BackendKind::kAuto)
    return Error{root.error().message + " (on the Docker backend it would be the engine's image, not inspected here)"};
  return root;
}

// Issue 37: a workdir the box will not have is refused here, not by every session's start.
bool WorkdirOk(const Policy& policy) {
  native::WorkdirFinding f = native::CheckWorkdir(policy, RootForCheck(policy));
  auto pos = policy.positions.find("container.workdir");
  std::string where = pos == policy.positions.end() ? policy.source_file : pos->second.ToString();
  if (f.verdict == native::WorkdirFinding::Verdict::kMissing) {
    std::fprintf(stderr, "%s\n", PolicyDiagnostic{pos->second, f.message, f.hint}.ToString().c_str());
    return false;
  }
  if (f.verdict == native::WorkdirFinding::Verdict::kNotInspected)
    std::fprintf(stderr,
                 "%s: note: container.workdir %s was not checked: %s; if the image has no such directory, every box "
                 "fails at its start naming it\n",
                 where.c_str(), policy.workdir.c_str(), f.message.c_str());
  return true;
}

int Check(const Args& args) {
  if (args.empty()) return Usage("check needs at least one policy file");
  for (const auto& a : args) {
    if (IsHelp(a)) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a.size() > 1 && a[0] == '-') return Usage("unknown option '" + a + "'");
  }
  int status = 0;
  for (const auto& target : args) {
    Result<Policy> policy = LoadPolicy(target);
    if (!policy.ok()) {
      std::fprintf(stderr, "%s\n", policy.error().message.c_str());
      status = 1;
      continue;
    }
    if (!WorkdirOk(*policy)) {
      status = 1;
      continue;
    }
    std::printf("ok: %s (%s)\n", policy->name.c_str(), policy->source_file.c_str());
  }
  return status;
}

int Explain(const Args& args) {
  bool json = false;
  std::string target;
  for (const auto& a : args) {
    if (IsHelp(a)) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "--json") {
      json = true;
    } else if (a.size() > 1 && a[0] == '-') {
      return Usage("unknown option '" + a + "'");
    } else if (!target.empty()) {
      return Usage("explain takes one policy");
    } else {
      target = a;
    }
  }
  if (target.empty()) return Usage("explain needs a policy file or name");
  Result<Policy> policy = LoadPolicy(target);
  if (!policy.ok()) {
    std::fprintf(stderr, "%s\n", policy.error().message.c_str());
    return 1;
  }
  std::string text = json ? ExplanationJson(*policy).dump(2) + "\n" : FormatExplanation(*policy);
  std::fputs(text.c_str(), stdout);
  return 0;
}

int Controls(const Args& args) {
  bool as_json = false;
  for (const auto& a : args) {
    if (IsHelp(a)) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a != "--json") return Usage("controls takes only --json, not '" + a + "'");
    as_json = true;
  }
  if (!as_json) {
    std::fputs(ControlsMarkdown().c_str(), stdout);
    return 0;
  }
  nlohmann::json out = nlohmann::json::array();
  for (const ControlInfo& c : AllControls())
    out.push_back({{"control", c.key}, {"section", SectionName(c.section)}, {"default", c.default_value},
                   {"request_may_lower", c.narrowing == Narrowing::kLower}, {"doc", c.doc}});
  std::fputs((out.dump(2) + "\n").c_str(), stdout);
  return 0;
}

}  // namespace

int PolicyCommand(const Args& args) {
  if (args.empty()) return Usage("missing subcommand");
  const std::string& sub = args[0];
  Args rest(args.begin() + 1, args.end());
  if (IsHelp(sub)) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (sub == "check") return Check(rest);
  if (sub == "explain") return Explain(rest);
  if (sub == "controls") return Controls(rest);
  return Usage("unknown subcommand '" + sub + "'");
}

}  // namespace lsb::cli
