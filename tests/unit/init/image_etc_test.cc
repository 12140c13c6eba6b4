// The image root's /etc (init/image_etc.h): the box's user is added to the image's passwd and
// group only when the image has no entry for its id.
#include "init/image_etc.h"

#include <gtest/gtest.h>

namespace lsb::init {
namespace {

constexpr const char* kDebianPasswd =
    "root:x:0:0:root:/root:/bin/bash\n"
    "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";

TEST(ImageEtc, TheBoxsUserIsAddedWhenTheImageLacksItsUid) {
  std::string out = WithEntryFor(kDebianPasswd, 1000, "sandbox:x:1000:1000:sandbox:/tmp:/usr/sbin/nologin");
  EXPECT_EQ(out, std::string(kDebianPasswd) + "sandbox:x:1000:1000:sandbox:/tmp:/usr/sbin/nologin\n");
}

TEST(ImageEtc, AnImageThatNamesTheUidKeepsItsOwnEntry) {
  EXPECT_EQ(WithEntryFor(kDebianPasswd, 65534, "sandbox:x:65534:65534::/tmp:/bin/false"), kDebianPasswd);
  // The id is matched as the third field, not as text anywhere on a line.
  std::string tricky = "u1000:x:5:5:1000:/home/1000:/bin/sh";  // no newline at the end either
  EXPECT_EQ(WithEntryFor(tricky, 1000, "sandbox:x:1000:1000::/tmp:/bin/false"),
            tricky + "\nsandbox:x:1000:1000::/tmp:/bin/false\n");
  EXPECT_EQ(WithEntryFor("staff:x:1000:\n", 1000, "sandbox:x:1000:"), "staff:x:1000:\n");  // group form
}

TEST(ImageEtc, AnEmptyFileGetsTheEntry) { EXPECT_EQ(WithEntryFor("", 7, "a:x:7:"), "a:x:7:\n"); }

}  // namespace
}  // namespace lsb::init
