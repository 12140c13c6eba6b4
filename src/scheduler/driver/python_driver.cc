#include "scheduler/driver/python_driver.h"

#include "scheduler/changes/change_set.h"
#include "scheduler/driver/rich_outputs.h"

namespace lsb::sched {

const std::string& PythonDriverProgram() {
  static const std::string program = RichOutputSource() + PythonDriverSource();
  return program;
}

Status CheckDriverSupported(const Policy& policy) {
  const Language* py = policy.FindLanguage("python");
  if (!py || py->command.empty())
    return Error{"policy '" + policy.name + "' has no python language; the python session interpreter needs one"};
  if (!policy.Allows(py->command[0]) || policy.Denies(py->command[0]))
    return Error{"policy '" + policy.name + "' does not allow " + py->command[0] +
                 ", which the python session interpreter runs; allow it or use another policy"};
  return OkStatus();
}

Result<std::unique_ptr<PythonDriver>> PythonDriver::Start(BoxSession& session, uint64_t lifetime_ms,
                                                          const ZygoteSpec* zygote, ExecResult* setup) {
  const Policy& policy = session.policy();
  LSB_TRY(CheckDriverSupported(policy));
  ExecRequest req;
  req.language = "python";
  req.code = "";
  req.stdin_data = "";
  req.prelude_args = {"-c", PythonDriverProgram()};
  LSB_ASSIGN_OR_RETURN(protocol::RunSpec spec, BuildRunSpec(policy, req));
  spec.file_name = "lsb_driver.py";  // empty, and unread: sys.argv[1] of the driver
  spec.timeout_ms = lifetime_ms;
  // The host enforces each op's own cap; the driver's whole-life output has none of its own.
  spec.output_limit_bytes = uint64_t{1} << 50;
  std::unique_ptr<PythonDriver> d(new PythonDriver(session));
  LSB_ASSIGN_OR_RETURN(d->wire_, DriverWire::Start(session, spec, ""));
  if (zygote) {
    std::string roots;
    for (const auto& r : zygote->roots) roots += r + "\n";
    std::string header = "S " + std::to_string(zygote->setup.size()) + " " + std::to_string(roots.size()) + "\n";
    LSB_ASSIGN_OR_RETURN(ExecResult r, d->RunCode(header, zygote->setup, roots, policy.timeout_ms, policy.output_bytes));
    d->zygote_ = r.status == ExecStatus::kOk && d->alive();
    if (setup) *setup = std::move(r);
  }
  return d;
}

Result<FileOpResult> PythonDriver::StateOp(const char* op, uint64_t timeout_ms) {
  if (!zygote_) return Error{"the session's interpreter is not a zygote (its setup failed)"};
  LSB_ASSIGN_OR_RETURN(DriverReply rep, Send(std::string(op) + " 0 0\n", "", "", timeout_ms, 64 << 10));
  if (rep.deadline || rep.over_cap || rep.run_ended)
    return Error{"the session's interpreter ended or did not answer within " + std::to_string(timeout_ms) + " ms"};
  FileOpResult f;
  f.status = rep.status == 0 ? FileOpStatus::kOk : FileOpStatus::kFailed;
  f.message = rep.err;
  return f;
}

PythonDriver::~PythonDriver() { Stop(); }

void PythonDriver::Stop() {
  if (wire_) wire_->Stop();
}

Result<ExecResult> PythonDriver::Execute(const std::string& code, const std::string& stdin_data,
                                         uint64_t timeout_ms, uint64_t output_cap, const RunCallbacks* live,
                                         const std::atomic<bool>* preempt) {
  std::string header = "X " + std::to_string(code.size()) + " " + std::to_string(stdin_data.size()) + "\n";
  return RunCode(header, code, stdin_data, timeout_ms, output_cap, live, zygote_ ? preempt : nullptr);
}

Result<FileOpResult> PythonDriver::Namespace(const std::string& name, NamespaceOp op) {
  std::string header = "N " + std::to_string(name.size()) + " " + std::to_string(static_cast<int>(op)) + "\n";
  LSB_ASSIGN_OR_RETURN(DriverReply rep, Send(header, name, "", 10000, 64 << 10));
  if (rep.deadline || rep.over_cap || rep.run_ended)
    return Error{"the session's interpreter ended or did not answer while switching its namespace"};
  FileOpResult f;
  f.status = static_cast<FileOpStatus>(rep.status);
  f.message = rep.err;
  return f;
}

Result<FileOpResult> PythonDriver::RecordOp(char op, const std::string& first, const std::string& second,
                                            uint64_t timeout_ms, uint64_t reply_cap) {
  std::string header = std::string(1, op) + " " + std::to_string(first.size()) + " " + std::to_string(second.size()) + "\n";
  LSB_ASSIGN_OR_RETURN(DriverReply rep, Send(header, first, second, timeout_ms, reply_cap + (64 << 10)));
  if (rep.deadline || rep.over_cap || rep.run_ended)
    return Error{std::string("the interpreter in the box ended before it answered (") +
                 (rep.deadline ? "out of time" : rep.over_cap ? "it sent more than the bound" : "it exited") + ")"};
  FileOpResult f;
  f.status = static_cast<FileOpStatus>(rep.status);
  f.message = rep.err;
  if (f.status == FileOpStatus::kOk) f.data = std::move(rep.out);
  return f;
}

}  // namespace lsb::sched
