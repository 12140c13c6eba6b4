// The settings `policy explain` prints, one row per control of the table (or per item of a list
// control), in words a reader checks against the file.
#include "policy/explain.h"

#include <cstdio>

#include "policy/command_presets.h"
#include "policy/suggest.h"
#include "policy/units.h"

namespace lsb {
namespace {

std::string Bytes(uint64_t b) { return units::FormatBytes(b) + " (" + std::to_string(b) + " bytes)"; }

std::string List(const std::vector<std::string>& items) {
  if (items.empty()) return "(none)";
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string Octal(uint32_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", mode);
  return buf;
}

std::string Flag(bool b) { return b ? "true" : "false"; }

class RowWriter {
 public:
  RowWriter(const Policy& p, std::vector<ControlRow>& out) : p_(p), out_(out) {}

  // One case per control, so the compiler names a control added to the table without its words
  // here: a switch of one-line cases, longer than a function should be for that reason.
  void Rows(Control c) {
    switch (c) {
      case Control::kImage: return Add(c, p_.image);
      case Control::kPull: return Add(c, p_.pull);
      case Control::kBuild: return Build();
      case Control::kReadOnly: return Add(c, "true (always)");
      case Control::kTmpfs: return Tmpfs();
      case Control::kMounts: return Mounts();
      case Control::kUserNamespace: return Add(c, Flag(p_.user_namespace));
      case Control::kUser: return Add(c, std::to_string(p_.uid) + ":" + std::to_string(p_.gid));
      case Control::kPrivileges: return AddRow(c, KeyOf(c), "none (always)", "(built in)");
      case Control::kSeccomp: return Add(c, p_.seccomp);
      case Control::kNetworkEnabled: return Add(c, Flag(p_.network_enabled));
      case Control::kNetworkAllow:
        if (p_.network_enabled)
          Add(c, p_.network_allow.empty() ? std::string("[] (nothing)") : JoinList(p_.network_allow));
        return;
      case Control::kNetworkDeny:
        if (p_.network_enabled && !p_.network_deny.empty()) Add(c, JoinList(p_.network_deny));
        return;
      case Control::kNetworkSecrets:
        if (p_.network_enabled && !p_.network_secrets.empty())
          Add(c, std::to_string(p_.network_secrets.size()) + " header(s)");
        return;
      case Control::kCommandsAllow: return CommandsAllow();
      case Control::kCommandsDeny: return Add(c, List(p_.deny));
      case Control::kLanguages: return Languages();
      case Control::kCpu: return Add(c, units::FormatCpu(p_.cpu) + " cores");
      case Control::kMemory: return Add(c, Bytes(p_.memory_bytes));
      case Control::kPids: return Add(c, std::to_string(p_.pids));
      case Control::kTimeout: return Add(c, units::FormatDurationMs(p_.timeout_ms));
      case Control::kTimeoutGrace: return Add(c, units::FormatDurationMs(p_.timeout_grace_ms));
      case Control::kOutput: return Add(c, Bytes(p_.output_bytes));
      case Control::kOpenFiles: return Add(c, std::to_string(p_.open_files));
      case Control::kFileSize: return Add(c, Bytes(p_.file_size_bytes));
      case Control::kEnv: return Env();
      case Control::kWorkdir: return Add(c, p_.workdir);
      case Control::kTrace: return Add(c, Flag(p_.trace));
      case Control::kAlerts: return Alerts();
      case Control::kSessionSetup:
        if (WrittenInPolicy(p_, c)) Add(c, std::to_string(p_.session_setup.size()) + " bytes of Python");
        return;
      case Control::kBackend: return Add(c, Spelling(p_.backend));
      case Control::kRuntime: return Add(c, Spelling(p_.runtime));
      case Control::kGvisorAcceptWeaker:
        if (WrittenInPolicy(p_, c)) Add(c, Flag(p_.gvisor_accept_weaker));
        return;
    }
  }

 private:
  void AddRow(Control c, std::string label, std::string setting, std::string source, std::string item = "") {
    out_.push_back({c, std::move(label), std::move(setting), std::move(source), std::move(item)});
  }
  void Add(Control c, std::string setting) { AddRow(c, KeyOf(c), std::move(setting), SourceOf(p_, KeyOf(c))); }

  void Build() {
    const BuildSpec& b = p_.build;
    if (b.empty()) return;
    std::string steps;
    auto part = [&](const std::string& name, const std::vector<std::string>& items) {
      if (items.empty()) return;
      if (!steps.empty()) steps += "; ";
      steps += name + ": " + JoinList(items);
    };
    part("apt", b.apt);
    part("apt_sources", b.apt_sources);
    part("pip", b.pip);
    std::vector<std::string> files;
    for (const BuildFile& f : b.files) files.push_back(f.source + " -> " + f.target);
    part("files", files);
    part("run", b.run);
    Add(Control::kBuild, steps);
  }

  void Tmpfs() {
    if (p_.tmpfs.empty()) return Add(Control::kTmpfs, "(none)");
    for (const auto& m : p_.tmpfs)
      AddRow(Control::kTmpfs, "container.tmpfs " + m.path,
             m.path + " size=" + units::FormatBytes(m.size_bytes) + " mode=" + Octal(m.mode) + " noexec,nosuid,nodev",
             SourceOf(p_, "container.tmpfs." + m.path), m.path);
  }

  void Mounts() {
    for (const auto& m : p_.mounts)
      AddRow(Control::kMounts, "container.mounts " + m.target,
             m.source + " -> " + m.target + " " + m.mode +
                 (m.mode == "overlay" ? " size=" + units::FormatBytes(m.size_bytes) : std::string()),
             SourceOf(p_, "container.mounts"), m.target);
  }

  void CommandsAllow() {
    Add(Control::kCommandsAllow, AllowSetting());
    for (const auto& name : p_.allow_presets) {
      const CommandPreset* preset = FindCommandPreset(name);
      if (!preset) continue;
      AddRow(Control::kCommandsAllow, "commands.allow " + name, PresetSetting(*preset),
             SourceOf(p_, "commands.allow." + name), name);
    }
  }

  // The entries as written: hand-written paths, then the presets by name (their paths in rows of
  // their own). Without presets, every path.
  std::string AllowSetting() const {
    if (p_.allow_presets.empty()) return List(p_.allow);
    std::vector<std::string> written;
    for (size_t i = 0; i < p_.allow.size() && p_.positions.count("commands.allow[" + std::to_string(i) + "]"); ++i)
      written.push_back(p_.allow[i]);
    for (const auto& name : p_.allow_presets) written.push_back(name);
    return List(written);
  }

  std::string PresetSetting(const CommandPreset& preset) const {
    std::vector<std::string> denied;
    for (const auto& command : preset.commands)
      for (const auto& dir : {"/usr/bin/", "/bin/"})
        if (p_.Denies(dir + command)) denied.push_back(dir + command);
    return preset.summary + ": " + List(preset.commands) + " (" + std::to_string(preset.commands.size()) +
           " commands" + (denied.empty() ? "" : "; denied by commands.deny, so left out: " + List(denied)) + ")";
  }

  void Languages() {
    std::string setting = "default " + p_.default_language;
    for (const auto& [name, lang] : p_.languages) {
      std::string argv;
      for (const auto& a : lang.command) argv += (argv.empty() ? "" : " ") + a;
      setting += "; " + name + ": " + argv + " (" + lang.file_name + ")";
    }
    Add(Control::kLanguages, setting);
  }

  void Env() {
    std::string env;
    for (const auto& [k, v] : p_.env) env += (env.empty() ? "" : ", ") + k + "=" + v;
    Add(Control::kEnv, env.empty() ? "(none)" : env);
  }

  void Alerts() {
    if (p_.alert_severity.empty()) return;
    std::string setting;
    for (const auto& [rule, severity] : p_.alert_severity)
      setting += (setting.empty() ? "" : ", ") + std::string(protocol::Name(rule)) + ": " +
                 (severity ? protocol::Name(*severity) : "off");
    Add(Control::kAlerts, setting);
  }

  const Policy& p_;
  std::vector<ControlRow>& out_;
};

}  // namespace

std::string SourceOf(const Policy& p, const std::string& key) {
  if (key.empty()) return "(built in)";
  auto it = p.positions.find(key);
  return it == p.positions.end() ? "(default)" : it->second.ToString();
}

std::vector<ControlRow> ControlRows(const Policy& policy) {
  std::vector<ControlRow> rows;
  RowWriter writer(policy, rows);
  for (const ControlInfo& c : AllControls()) writer.Rows(c.id);
  return rows;
}

}  // namespace lsb
