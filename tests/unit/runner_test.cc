#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <functional>
#include <tuple>
#include <thread>

#include "base/unique_fd.h"
#include "protocol/frame.h"
#include "runtime/runner.h"
#include "server/json_codec.h"

namespace lsb {
namespace {

using protocol::FrameType;

Policy TestPolicy() {
  Policy p;
  p.name = "test";
  p.image = "host";
  p.languages["python"] = Language{"python", {"/usr/bin/python3", "-u", "{file}"}, "main.py"};
  p.languages["bash"] = Language{"bash", {"/bin/bash", "{file}"}, "main.sh"};
  p.allow = {"/usr/bin/python3", "/bin/bash"};
  p.default_language = "python";
  p.env = {{"A", "1"}, {"B", "2"}};
  p.timeout_ms = 30000;
  p.output_bytes = 100;
  p.memory_bytes = 64 << 20;
  p.pids = 32;
  return p;
}

TEST(BuildRunSpec, FromPolicyAndRequest) {
  ExecRequest req;
  req.code = "print(1)";
  req.env = {{"C", "3"}};
  req.timeout_ms = 5000;
  req.stdin_data = "in";
  auto s = BuildRunSpec(TestPolicy(), req);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->argv, (std::vector<std::string>{"/usr/bin/python3", "-u", "{file}"}));
  EXPECT_EQ(s->file_name, "main.py");
  EXPECT_EQ(s->env.at("A"), "1");
  EXPECT_EQ(s->env.at("B"), "2");
  EXPECT_EQ(s->env.at("C"), "3");
  EXPECT_EQ(s->timeout_ms, 5000u);
  EXPECT_EQ(s->output_limit_bytes, 100u);
  EXPECT_TRUE(s->stdin_follows);
}

// Every source of a request's env passes BuildRunSpec: the refusals of policy/env_rules.h apply.
TEST(BuildRunSpec, RefusesTheEnvironmentAPolicyWouldRefuse) {
  for (const auto& [name, value, words] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"LD_PRELOAD", "/lib/x86_64-linux-gnu/libc.so.6", "dynamic loader"},
           {"LD_LIBRARY_PATH", "/tmp", "dynamic loader"},
           {"GLIBC_TUNABLES", "glibc.malloc.check=3", "glibc"},
           {"PYTHONPATH", "/tmp", "start-up hook"},
           {"B", "x", "the policy sets it"},
           {"PATH", "/tmp", "init sets it"},
           {"A=B", "x", "not a valid variable name"},
           {std::string("N\0UL", 4), "x", "not a valid variable name"},
           {"V", std::string("a\0b", 3), "NUL"}}) {
    ExecRequest req;
    req.env = {{name, value}};
    auto s = BuildRunSpec(TestPolicy(), req);
    ASSERT_FALSE(s.ok()) << name;
    EXPECT_EQ(s.error().message.rfind("env.", 0), 0u) << s.error().message;
    EXPECT_NE(s.error().message.find(words), std::string::npos) << s.error().message;
  }
}

TEST(BuildRunSpec, TimeoutMayOnlyBeLowered) {
  ExecRequest req;
  req.timeout_ms = 60000;
  auto s = BuildRunSpec(TestPolicy(), req);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("only lower"), std::string::npos);
}

TEST(BuildRunSpec, UnknownLanguageNamesKnownOnes) {
  ExecRequest req;
  req.language = "ruby";
  auto s = BuildRunSpec(TestPolicy(), req);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("ruby"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("python"), std::string::npos) << s.error().message;
}

TEST(OutputBudget, CapsStdoutAndStderrTogether) {
  OutputBudget b(10);
  std::string out, err;
  bool trunc = false;
  EXPECT_EQ(b.Append(out, "123456", &trunc), 6u);
  EXPECT_EQ(b.Append(err, "abcdef", &trunc), 4u);
  EXPECT_TRUE(trunc);
  EXPECT_EQ(b.Append(out, "z", &trunc), 0u);
  EXPECT_EQ(out, "123456");
  EXPECT_EQ(err, "abcd");
}

TEST(ApplyVerdict, OomBecomesStatusAndAlert) {
  ExecResult r;
  r.status = ExecStatus::kKilled;
  r.signal = 9;
  BoxVerdict before, after;
  after.oom_kill_count = 1;
  after.memory_peak_bytes = 67108864;
  ApplyVerdict(before, after, TestPolicy(), r);
  EXPECT_EQ(r.status, ExecStatus::kOom);
  ASSERT_EQ(r.alerts.size(), 1u);
  EXPECT_EQ(r.alerts[0].rule, protocol::AlertRule::kOomKill);
  EXPECT_NE(r.alerts[0].message.find("64 MiB"), std::string::npos);
  EXPECT_EQ(*r.memory_peak_bytes, 67108864u);
  EXPECT_EQ(CliExitCode(r), 137);
}

TEST(ApplyVerdict, CountersAreComparedPerRun) {
  ExecResult r;
  r.status = ExecStatus::kOk;
  r.exit_code = 0;
  BoxVerdict before, after;
  before.oom_kill_count = after.oom_kill_count = 2;  // an earlier run's OOM
  before.pids_limit_events = 3;
  after.pids_limit_events = 10;
  ApplyVerdict(before, after, TestPolicy(), r);
  EXPECT_EQ(r.status, ExecStatus::kOk);
  ASSERT_EQ(r.alerts.size(), 1u);
  EXPECT_EQ(r.alerts[0].rule, protocol::AlertRule::kPidsLimit);
  EXPECT_NE(r.alerts[0].message.find("7 time(s)"), std::string::npos);
}

TEST(ExecResult, JsonAndExitCodes) {
  ExecResult r;
  r.stdout_data = "hi\n";
  r.stderr_data = std::string("\xff\xfe", 2);  // not UTF-8
  r.status = ExecStatus::kError;
  r.exit_code = 3;
  r.execution_id = NewExecutionId();
  r.backend = "native";
  auto text = r.ToJsonText();
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["stdout"], "hi\n");
  EXPECT_EQ(j["status"], "error");
  EXPECT_EQ(j["exit_code"], 3);
  EXPECT_TRUE(j["memory_peak_bytes"].is_null());
  EXPECT_TRUE(j["alerts"].is_array());
  EXPECT_EQ(CliExitCode(r), 3);
  r.status = ExecStatus::kTimeout;
  EXPECT_EQ(CliExitCode(r), 124);
  r.status = ExecStatus::kDenied;
  EXPECT_EQ(CliExitCode(r), 126);
  r.status = ExecStatus::kKilled;
  r.signal = 15;
  EXPECT_EQ(CliExitCode(r), 143);
  EXPECT_EQ(ParseExecStatus("output_limit"), ExecStatus::kOutputLimit);
  EXPECT_FALSE(ParseExecStatus("nope"));
}

// Output that is not UTF-8 comes back exactly as base64 next to the lossy text (issue 16); valid
// text carries no extra field.
TEST(ExecResult, OutputThatIsNotUtf8AlsoComesAsBase64) {
  ExecResult r;
  for (int b = 0; b < 256; ++b) r.stdout_data.push_back(static_cast<char>(b));
  r.stderr_data = "caf\xc3\xa9\n";
  auto j = nlohmann::json::parse(r.ToJsonText());
  ASSERT_TRUE(j.contains("stdout_base64"));
  bool ok = false;
  EXPECT_EQ(server::Base64Decode(j["stdout_base64"].get<std::string>(), &ok), r.stdout_data);
  EXPECT_TRUE(ok);
  EXPECT_NE(j["stdout"].get<std::string>().find("\xef\xbf\xbd"), std::string::npos);  // U+FFFD in the text
  EXPECT_FALSE(j.contains("stderr_base64"));
  EXPECT_EQ(j["stderr"], "caf\xc3\xa9\n");
}

// A backend whose "init" is a thread speaking the init side of the protocol from a script.
using InitScript = std::function<void(int fd)>;

class FakeBox : public Box {
 public:
  FakeBox(UniqueFd host, UniqueFd init, InitScript script) : host_(std::move(host)) {
    int fd = init.release();
    thread_ = std::thread([fd, script] {
      // A real init is another process: a write after the host closed its end (a protocol error
      // it refused) fails with EPIPE there, and must not kill this test's process with SIGPIPE.
      sigset_t pipe;
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
      script(fd);
      ::close(fd);
    });
  }
  ~FakeBox() override {
    Kill();
    thread_.join();
  }
  int stream_fd() const override { return host_.get(); }
  BoxVerdict Verdict() override { return verdict; }
  void Kill() override { ::shutdown(host_.get(), SHUT_RDWR); }
  std::string id() const override { return "fake"; }
  std::string Diagnostics() override { return "fake init stderr"; }
  BoxVerdict verdict;

 private:
  UniqueFd host_;
  std::thread thread_;
};

class FakeBackend : public Backend {
 public:
  explicit FakeBackend(InitScript s) : script_(std::move(s)) {}
  std::string name() const override { return "fake"; }
  // A test double (not a backend a policy runs on): every control "enforced", Check decides.
  Enforcement DescribeControl(const ControlRow&, const Policy&) const override { return Enforced("test double"); }
  Status Check(const Policy&) const override { return OkStatus(); }
  Result<protocol::BoxSetup> SetupFor(const Policy&) const override { return protocol::BoxSetup{}; }
  Result<std::unique_ptr<Box>> Start(const Policy&, const protocol::BoxSetup& setup, const BoxOwner&) override {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return Error::FromErrno("socketpair");
    // Backend::Start's contract: the setup is the stream's first frame.
    LSB_TRY(protocol::WriteFrame(sv[0], FrameType::kSetup, nlohmann::json(setup).dump()));
    auto box = std::make_unique<FakeBox>(UniqueFd(sv[0]), UniqueFd(sv[1]), script_);
    last = box.get();
    return std::unique_ptr<Box>(std::move(box));
  }
  FakeBox* last = nullptr;

 private:
  InitScript script_;
};

void Send(int fd, FrameType t, const std::string& payload) { (void)protocol::WriteFrame(fd, t, payload); }

// A well-behaved init: ready, echo stdin to stdout, one alert, exit 3.
void GoodInit(int fd) {
  auto setup = protocol::ReadFrame(fd);
  if (!setup.ok() || setup->type != FrameType::kSetup) return;
  Send(fd, FrameType::kReady, nlohmann::json(protocol::InitReady{1, 3, protocol::BoxMode::kBuildRoot}).dump());
  for (;;) {
    auto run = protocol::ReadFrame(fd);
    if (!run.ok() || run->type == FrameType::kShutdown) return;
    auto spec = nlohmann::json::parse(run->payload).get<protocol::RunSpec>();
    auto code = protocol::ReadFrame(fd);
    std::string in;
    if (spec.stdin_follows) {
      for (;;) {
        auto f = protocol::ReadFrame(fd);
        if (!f.ok() || f->type == FrameType::kStdinEof) break;
        in += f->payload;
      }
    }
    Send(fd, FrameType::kStdout, "code=" + code->payload + " in=" + in);
    Send(fd, FrameType::kStderr, "err");
    protocol::Event ev;
    ev.kind = "connect";
    ev.rule = protocol::AlertRule::kNetworkAttempt;
    ev.severity = protocol::Severity::kCritical;
    ev.address = "127.0.0.1:6379";
    Send(fd, FrameType::kEvent, nlohmann::json(ev).dump());
    protocol::Event trace;
    trace.kind = "exec";
    trace.severity = protocol::Severity::kInfo;
    Send(fd, FrameType::kEvent, nlohmann::json(trace).dump());
    protocol::ExitReport rep;
    rep.status = ExecStatus::kError;
    rep.exit_code = 3;
    rep.duration_ms = 12;
    rep.cpu_ms = 5;
    Send(fd, FrameType::kExit, nlohmann::json(rep).dump());
  }
}

TEST(BoxSession, RunsSeveralProgramsInOneBox) {
  FakeBackend backend(GoodInit);
  auto s = BoxSession::Open(backend, TestPolicy());
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ((*s)->ready().landlock_abi, 3);
  for (int i = 0; i < 3; ++i) {
    ExecRequest req;
    req.code = "p" + std::to_string(i);
    req.stdin_data = std::string(200000, 'x');  // more than a socket buffer: no deadlock
    std::string live;
    std::vector<protocol::Event> events;
    RunCallbacks cb;
    cb.on_stdout = [&](std::string_view d) { live += d; };
    cb.on_event = [&](const protocol::Event& e) { events.push_back(e); };
    auto r = (*s)->Run(req, cb);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->status, ExecStatus::kError);
    EXPECT_EQ(r->exit_code, 3);
    EXPECT_EQ(r->backend, "fake");
    // Output cap of 100 bytes over stdout+stderr.
    EXPECT_TRUE(r->truncated);
    EXPECT_EQ(r->stdout_data.size(), 100u);
    EXPECT_EQ(r->stdout_data.substr(0, 8), "code=p" + std::to_string(i) + " ");
    EXPECT_EQ(live, r->stdout_data);
    EXPECT_EQ(events.size(), 2u);       // the callback sees traces too
    ASSERT_EQ(r->alerts.size(), 1u);    // the result keeps alerts only
    EXPECT_EQ(r->alerts[0].address, "127.0.0.1:6379");
  }
}

TEST(BoxSession, InitErrorAtSetupIsAnErrorWithItsMessage) {
  FakeBackend backend([](int fd) {
    (void)protocol::ReadFrame(fd);
    Send(fd, FrameType::kError, nlohmann::json(protocol::InitError{protocol::ErrorStage::kSetup, "landlock: not supported", 95}).dump());
  });
  auto s = BoxSession::Open(backend, TestPolicy());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("landlock: not supported"), std::string::npos);
}

TEST(BoxSession, WithoutAwaitingReadyTheProgramFollowsSetupAtOnce) {
  // This init reads kRun before it answers kSetup: a host that waited for kReady first would
  // deadlock here until the setup timeout.
  FakeBackend backend([](int fd) {
    auto setup = protocol::ReadFrame(fd);
    auto run = protocol::ReadFrame(fd);
    auto code = protocol::ReadFrame(fd);
    if (!setup.ok() || !run.ok() || !code.ok() || run->type != FrameType::kRun) return;
    Send(fd, FrameType::kReady, nlohmann::json(protocol::InitReady{1, 5, protocol::BoxMode::kBuildRoot}).dump());
    Send(fd, FrameType::kStdout, "ran " + code->payload);
    protocol::ExitReport rep;
    rep.status = ExecStatus::kOk;
    Send(fd, FrameType::kExit, nlohmann::json(rep).dump());
  });
  SessionOptions o;
  o.await_ready = false;
  o.setup_timeout_ms = 3000;
  auto s = BoxSession::Open(backend, TestPolicy(), o);
  ASSERT_TRUE(s.ok()) << s.error().message;
  ExecRequest req;
  req.code = "print(1)";
  auto r = (*s)->Run(req);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->stdout_data, "ran print(1)");
  EXPECT_EQ((*s)->ready().landlock_abi, 5);  // kReady was read on the way
}

// A word init sends that is not in its table (protocol/wire_values.h) is a protocol error naming
// it, not a default: an unknown status used to become "error" with a warning, an unknown rule an
// alert labelled "other".
TEST(BoxSession, AnUnknownWordFromInitIsAProtocolErrorNamingIt) {
  const std::pair<FrameType, std::string> bad[] = {
      {FrameType::kEvent, R"({"kind":"connect","rule":"exfiltrate","severity":"warning"})"},
      {FrameType::kEvent, R"({"kind":"connect","rule":"network_attempt","severity":"loud"})"},
      {FrameType::kExit, R"({"status":"exploded","exit_code":0})"},
  };
  const char* named[] = {"rule \"exfiltrate\"", "severity \"loud\"", "status \"exploded\""};
  for (size_t i = 0; i < std::size(bad); ++i) {
    FakeBackend backend([&, i](int fd) {
      (void)protocol::ReadFrame(fd);
      Send(fd, FrameType::kReady, nlohmann::json(protocol::InitReady{}).dump());
      (void)protocol::ReadFrame(fd);  // kRun
      (void)protocol::ReadFrame(fd);  // kCode
      Send(fd, bad[i].first, bad[i].second);
      Send(fd, FrameType::kExit, R"({"status":"ok","exit_code":0})");
    });
    auto s = BoxSession::Open(backend, TestPolicy());
    ASSERT_TRUE(s.ok()) << s.error().message;
    ExecRequest req;
    req.code = "print(1)";
    auto r = (*s)->Run(req);
    ASSERT_FALSE(r.ok()) << bad[i].second << " was accepted as " << ExecStatusName(r->status);
    EXPECT_NE(r.error().message.find("protocol: bad"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find(named[i]), std::string::npos) << r.error().message;
  }
}

TEST(BoxSession, WithoutAwaitingReadyARefusedSetupFailsTheRun) {
  FakeBackend backend([](int fd) {
    (void)protocol::ReadFrame(fd);
    Send(fd, FrameType::kError, nlohmann::json(protocol::InitError{protocol::ErrorStage::kSetup, "landlock: not supported", 95}).dump());
  });
  SessionOptions o;
  o.await_ready = false;
  auto s = BoxSession::Open(backend, TestPolicy(), o);
  ASSERT_TRUE(s.ok()) << s.error().message;
  ExecRequest req;
  req.code = "print(1)";
  auto r = (*s)->Run(req);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("refused to start"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("landlock: not supported"), std::string::npos) << r.error().message;
  EXPECT_FALSE((*s)->usable());
}

TEST(BoxSession, InitDyingEarlyReportsItsStderr) {
  FakeBackend backend([](int) {});
  auto s = BoxSession::Open(backend, TestPolicy());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("fake init stderr"), std::string::npos) << s.error().message;
}

TEST(BoxSession, SilentInitIsKilledAtTimeoutPlusGrace) {
  FakeBackend backend([](int fd) {
    (void)protocol::ReadFrame(fd);
    Send(fd, FrameType::kReady, "{}");
    // Swallow everything until the host hangs up; never report.
    while (protocol::ReadFrame(fd).ok()) {
    }
  });
  SessionOptions o;
  o.grace_ms = 100;
  ExecRequest req;
  req.timeout_ms = 100;
  auto t0 = std::chrono::steady_clock::now();
  auto r = RunOnce(backend, TestPolicy(), req, {}, o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, ExecStatus::kTimeout);
  EXPECT_EQ(r->exit_code, 124);  // the API's exit code is the CLI's (issue 16)
  EXPECT_EQ(CliExitCode(*r), 124);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  ASSERT_FALSE(r->alerts.empty());
  EXPECT_EQ(r->alerts[0].rule, protocol::AlertRule::kTimeout);
}

TEST(BoxSession, OomVerdictRefinesTheExit) {
  FakeBackend* bp = nullptr;
  FakeBackend backend([&bp](int fd) {
    (void)protocol::ReadFrame(fd);
    Send(fd, FrameType::kReady, "{}");
    (void)protocol::ReadFrame(fd);  // run
    (void)protocol::ReadFrame(fd);  // code
    bp->last->verdict.oom_kill_count = 1;
    bp->last->verdict.memory_peak_bytes = 1234;
    Send(fd, FrameType::kExit, R"({"status":"killed","exit_code":137,"signal":9})");
    while (protocol::ReadFrame(fd).ok()) {
    }
  });
  bp = &backend;
  auto r = RunOnce(backend, TestPolicy(), ExecRequest{});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, ExecStatus::kOom);
  EXPECT_EQ(*r->memory_peak_bytes, 1234u);
  ASSERT_EQ(r->alerts.size(), 1u);
  EXPECT_EQ(r->alerts[0].rule, protocol::AlertRule::kOomKill);
}

// A run whose init dies after reading the program (no exit report), having written `out` to
// stdout; `ended` sets how the box says it ended.
Result<ExecResult> RunWithInitDyingMidRun(std::function<void(BoxVerdict&)> ended, std::string out = "") {
  FakeBackend* bp = nullptr;
  FakeBackend backend([&bp, &ended, &out](int fd) {
    (void)protocol::ReadFrame(fd);
    Send(fd, FrameType::kReady, "{}");
    (void)protocol::ReadFrame(fd);  // run
    (void)protocol::ReadFrame(fd);  // code
    if (!out.empty()) Send(fd, FrameType::kStdout, out);
    ended(bp->last->verdict);
  });
  bp = &backend;
  return RunOnce(backend, TestPolicy(), ExecRequest{});
}

// Under gVisor the OOM killer takes the whole sandbox at the memory limit: no exit report, the
// stream ends, and the engine says OOMKilled. That is an oom result, not a sandbox error.
TEST(BoxSession, BoxKilledByTheOomKillerIsAnOomResult) {
  auto r = RunWithInitDyingMidRun([](BoxVerdict& v) {
    v.oom_kill_count = 1;
    v.init_exit_code = 137;
  }, "partial");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, ExecStatus::kOom);
  EXPECT_EQ(r->stdout_data, "partial");
  EXPECT_EQ(CliExitCode(*r), 137);
  ASSERT_EQ(r->alerts.size(), 1u);
  EXPECT_EQ(r->alerts[0].rule, protocol::AlertRule::kOomKill);
}

// A box killed from outside (docker kill) ends with init SIGKILLed: status killed (137), not a
// generic sandbox error.
TEST(BoxSession, InitSigkilledIsAKilledResult) {
  auto r = RunWithInitDyingMidRun([](BoxVerdict& v) { v.init_exit_code = 137; });
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, ExecStatus::kKilled);
  EXPECT_EQ(r->signal, 9);
  EXPECT_EQ(CliExitCode(*r), 137);
  EXPECT_TRUE(r->alerts.empty());
}

// Any other death of init mid-run stays a sandbox error, with init's exit and its stderr.
TEST(BoxSession, InitDyingMidRunOtherwiseIsAnError) {
  auto r = RunWithInitDyingMidRun([](BoxVerdict& v) { v.init_exit_code = 2; });
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("init exited with 2"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("fake init stderr"), std::string::npos) << r.error().message;
}

// The engine stopped answering when the stream ended (restarted mid-run): whatever the box's end
// looks like once it is back (init SIGKILLed by the stopping engine), the run is a sandbox error
// that names the engine.
TEST(BoxSession, BackendUnreachableAtTheEndIsAnErrorNamingIt) {
  auto r = RunWithInitDyingMidRun([](BoxVerdict& v) {
    v.init_exit_code = 137;
    v.backend_error = "cannot reach the Docker engine at unix:///x.sock: connect: refused";
  });
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("cannot reach the Docker engine"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace lsb
