// BoxSession on the real native backend and the real llm-sandbox-init (found next to this test
// binary): several runs in one box, per-run verdicts. Root only.
#include <gtest/gtest.h>
#include <unistd.h>

#include "runtime/native/init_binary.h"
#include "runtime/native/native_backend.h"
#include "runtime/runner.h"

namespace lsb {
namespace {

Policy PythonPolicy() {
  Policy p;
  p.name = "session-test";
  p.image = "host";
  p.tmpfs.push_back(TmpfsMount{"/tmp", 16 << 20, 01777, true, true, true, "size=16M"});
  p.allow = {"/usr/bin/python3"};
  p.languages["python"] = Language{"python", {"/usr/bin/python3", "-u", "{file}"}, "main.py"};
  p.default_language = "python";
  p.memory_bytes = 128 << 20;
  p.pids = 32;
  p.timeout_ms = 10000;
  return p;
}

class NativeSession : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root";
    if (!native::OpenInitBinary().ok()) GTEST_SKIP() << "llm-sandbox-init not built";
  }
  native::NativeBackend backend_;
};

TEST_F(NativeSession, SeveralRunsInOneBoxWithPerRunVerdicts) {
  auto s = BoxSession::Open(backend_, PythonPolicy());
  ASSERT_TRUE(s.ok()) << s.error().message;

  ExecRequest big;
  big.code = "b = bytearray(80 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint('big')\n";
  auto r1 = (*s)->Run(big);
  ASSERT_TRUE(r1.ok()) << r1.error().message;
  EXPECT_EQ(r1->stdout_data, "big\n");
  ASSERT_TRUE(r1->memory_peak_bytes);
  EXPECT_GT(*r1->memory_peak_bytes, 80u << 20);

  ExecRequest hog;
  hog.code = "x = []\nwhile True:\n    x.append(bytearray(16 << 20))\n";
  auto r2 = (*s)->Run(hog);
  ASSERT_TRUE(r2.ok()) << r2.error().message;
  EXPECT_EQ(r2->status, ExecStatus::kOom);

  // The box survives the OOM of a program; the next run is clean and its peak is its own.
  ExecRequest small;
  small.code = "print('small')\n";
  auto r3 = (*s)->Run(small);
  ASSERT_TRUE(r3.ok()) << r3.error().message;
  EXPECT_EQ(r3->status, ExecStatus::kOk);
  EXPECT_EQ(r3->stdout_data, "small\n");
  EXPECT_TRUE(r3->alerts.empty());
  ASSERT_TRUE(r3->memory_peak_bytes);
  EXPECT_LT(*r3->memory_peak_bytes, 60u << 20);
  (*s)->Close();
}

}  // namespace
}  // namespace lsb
