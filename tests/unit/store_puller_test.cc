// StorePuller and SharedStore (image/store_puller.h) without a registry: a loopback listener that
// never answers holds a pull open, so a second Pull of the same image arrives while the first is
// under way. The end-to-end pulls (one download for concurrent executes, counted at a registry)
// are tests/integration/test_pulled_image_run.py.
#include "image/store_puller.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "base/unique_fd.h"
#include "image_test_util.h"

namespace lsb::image {
namespace {

// Accepts connections (the kernel's backlog does) and never says a word.
class SilentListener {
 public:
  SilentListener() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd_.get(), 16);
    socklen_t len = sizeof a;
    ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  int port() const { return port_; }

 private:
  UniqueFd fd_;
  int port_ = 0;
};

PullOptions QuickFailing() {
  PullOptions o;
  o.attempts = 1;
  o.io_timeout = std::chrono::milliseconds(1500);
  return o;
}

TEST(SharedStoreTest, IsNotCreatedUntilFirstUseThenResolveSaysNotFound) {
  testing::ScratchDir scratch;
  StoreOptions so;
  so.root = scratch.path() + "/store";
  SharedStore store(so);
  struct stat st {};
  EXPECT_NE(::stat(so.root.c_str(), &st), 0) << "constructing must not create the store";
  auto ref = ParseImageReference("127.0.0.1:1/absent:1");
  ASSERT_TRUE(ref.ok());
  auto r = store.Resolve(*ref);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().IsNotFound()) << r.error().message;
  EXPECT_EQ(::stat((so.root + "/index.json").c_str(), &st), 0);
}

TEST(StorePullerTest, ASecondPullOfTheSameImageWaitsForTheFirstAndSharesItsResult) {
  testing::ScratchDir scratch;
  StoreOptions so;
  so.root = scratch.path() + "/store";
  auto store = std::make_shared<SharedStore>(so);
  StorePuller puller(store, QuickFailing());
  std::mutex mu;
  std::vector<std::string> states;
  puller.SetListener([&](const PullEvent& e) {
    std::lock_guard<std::mutex> lock(mu);
    states.push_back(e.state);
  });
  SilentListener silent;
  auto ref = ParseImageReference("127.0.0.1:" + std::to_string(silent.port()) + "/lsb/slow:1");
  ASSERT_TRUE(ref.ok());

  Status first = OkStatus(), second = OkStatus();
  std::thread a([&] { first = puller.Pull(*ref); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a is waiting for the silent registry
  std::thread b([&] { second = puller.Pull(*ref); });
  a.join();
  b.join();
  ASSERT_FALSE(first.ok());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(first.error().message, second.error().message);
  EXPECT_EQ(puller.registry_pulls(), 1u) << "the second caller must not go to the registry";
  EXPECT_EQ(states, (std::vector<std::string>{"started", "failed"}));

  // Over: a failure is not remembered, the next Pull tries the registry again.
  EXPECT_FALSE(puller.Pull(*ref).ok());
  EXPECT_EQ(puller.registry_pulls(), 2u);
}

TEST(StorePullerTest, PullsOfDifferentImagesDoNotWaitForEachOther) {
  testing::ScratchDir scratch;
  StoreOptions so;
  so.root = scratch.path() + "/store";
  StorePuller puller(std::make_shared<SharedStore>(so), QuickFailing());
  SilentListener silent;
  auto slow = ParseImageReference("127.0.0.1:" + std::to_string(silent.port()) + "/lsb/slow:1");
  auto refused = ParseImageReference("127.0.0.1:1/lsb/other:1");  // nothing listens on port 1
  ASSERT_TRUE(slow.ok() && refused.ok());
  std::thread a([&] { (void)puller.Pull(*slow); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(puller.Pull(*refused).ok());
  auto waited = std::chrono::steady_clock::now() - start;
  a.join();
  EXPECT_LT(waited, std::chrono::milliseconds(1000)) << "another image's pull must not wait for this one";
  EXPECT_EQ(puller.registry_pulls(), 2u);
}

}  // namespace
}  // namespace lsb::image
