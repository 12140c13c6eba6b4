#include "runtime/native/copy_up.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstring>

#include "base/io.h"
#include "base/unique_fd.h"

namespace lsb::native {
namespace {

int OpenBeneath(int dir, const std::string& rel, int flags) {
  struct open_how how {};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC | O_NOFOLLOW);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  return static_cast<int>(::syscall(SYS_openat2, dir, rel.c_str(), &how, sizeof how));
}

enum class Seen { kFile, kHidden, kAbsent, kOpaqueAbove };

// What one layer says of `rel`: the file, something that hides it from the layers below (a
// whiteout, a non-directory on the way), an opaque directory on the way, or nothing.
Seen Look(int layer, const std::string& rel, UniqueFd* file) {
  UniqueFd f(OpenBeneath(layer, rel, O_PATH));
  struct stat st {};
  if (f && ::fstat(f.get(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) return Seen::kHidden;
    *file = std::move(f);
    return Seen::kFile;
  }
  if (errno == ELOOP) return Seen::kHidden;  // a symlink where the file would be
  // Parents, from the top: a non-directory hides; an opaque directory hides what is below it.
  for (size_t p = rel.find('/'); p != std::string::npos; p = rel.find('/', p + 1)) {
    UniqueFd d(OpenBeneath(layer, rel.substr(0, p), O_PATH));
    if (!d) return errno == ELOOP ? Seen::kHidden : Seen::kAbsent;
    if (::fstat(d.get(), &st) != 0 || !S_ISDIR(st.st_mode)) return Seen::kHidden;
    UniqueFd r(OpenBeneath(layer, rel.substr(0, p), O_RDONLY | O_DIRECTORY));
    char v[2] = {};
    if (r && ::fgetxattr(r.get(), "user.overlay.opaque", v, sizeof v) == 1 && v[0] == 'y') return Seen::kOpaqueAbove;
  }
  return Seen::kAbsent;
}

}  // namespace

Status CopyUpFromLayers(const std::vector<std::string>& lowers, int upper, const std::string& rel, uid_t uid,
                        gid_t gid) {
  if (rel.empty() || rel[0] == '/' || rel.find("..") != std::string::npos) return Error{"bad copy-up path " + rel};
  UniqueFd found;
  for (auto it = lowers.rbegin(); it != lowers.rend(); ++it) {
    UniqueFd layer(::open(it->c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!layer) return Error::FromErrno("open layer " + *it);
    Seen seen = Look(layer.get(), rel, &found);
    if (seen == Seen::kFile) break;
    if (seen != Seen::kAbsent) return OkStatus();
  }
  if (!found) return OkStatus();
  UniqueFd in(::open(("/proc/self/fd/" + std::to_string(found.get())).c_str(), O_RDONLY | O_CLOEXEC));
  if (!in) return Error::FromErrno("open " + rel + " in the image");
  struct stat st {};
  if (::fstat(in.get(), &st) != 0) return Error::FromErrno("stat " + rel);
  UniqueFd out(OpenBeneath(upper, rel, O_WRONLY | O_CREAT | O_EXCL));
  if (!out) {
    // An upper without the directory (the image has a symlink there) or with the file: left alone.
    if (errno == EEXIST || errno == ENOENT || errno == ELOOP) return OkStatus();
    return Error::FromErrno("copy up " + rel);
  }
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(in.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::FromErrno("read " + rel);
    if (n == 0) break;
    LSB_TRY(WriteAll(out.get(), std::string_view(buf, static_cast<size_t>(n))));
  }
  if (::fchown(out.get(), uid, gid) != 0) return Error::FromErrno("chown " + rel);
  if (::fchmod(out.get(), st.st_mode & 0755) != 0) return Error::FromErrno("chmod " + rel);
  return OkStatus();
}

}  // namespace lsb::native
