#include "init/image_etc.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/io.h"
#include "base/unique_fd.h"
#include "init/mounts.h"

namespace lsb::init {
namespace {

// The new root's own tmpfs is 1 MiB: an image's passwd or group larger than this stays as it is.
constexpr size_t kMaxAccountsFile = 128 * 1024;

// The image's regular file `path` (never through a symlink), at most kMaxAccountsFile bytes;
// nullopt-like empty result with `present` false when it is not a regular file of that size.
Result<std::string> ReadImageFile(const std::string& path, bool* present) {
  *present = false;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd) return std::string();
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || static_cast<size_t>(st.st_size) > kMaxAccountsFile)
    return std::string();
  std::string out(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = ::read(fd.get(), out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error::FromErrno("read " + path);
    got += static_cast<size_t>(n);
  }
  *present = true;
  return out;
}

// Writes `text` beside the new root's entries, binds it over `target`, and drops the name: the
// mount keeps the file.
Status LayOver(const std::string& new_root, const std::string& name, const std::string& text, const std::string& target) {
  const std::string staged = new_root + "/.lsb-etc-" + name;
  {
    UniqueFd fd(::open(staged.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (!fd) return Error::FromErrno("create " + staged);
    LSB_TRY(WriteAll(fd.get(), text));
  }
  Status st = BindReadOnlyOver(staged, target);
  ::unlink(staged.c_str());
  return st;
}

}  // namespace

std::string WithEntryFor(const std::string& text, unsigned id, const std::string& line) {
  const std::string want = std::to_string(id);
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    std::string l = text.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    size_t c1 = l.find(':'), c2 = c1 == std::string::npos ? c1 : l.find(':', c1 + 1);
    size_t c3 = c2 == std::string::npos ? c2 : l.find(':', c2 + 1);
    if (c2 != std::string::npos && l.substr(c2 + 1, c3 == std::string::npos ? std::string::npos : c3 - c2 - 1) == want)
      return text;
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  std::string out = text;
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out + line + "\n";
}

Status OverlayImageEtc(const std::string& new_root, const protocol::BoxSetup& setup) {
  const std::string etc = new_root + "/etc";
  struct stat st {};
  if (::lstat(etc.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return OkStatus();  // no /etc of its own
  const std::string uid = std::to_string(setup.uid), gid = std::to_string(setup.gid);
  struct File {
    const char* name;
    std::string (*make)(const std::string& image, const protocol::BoxSetup& s, const std::string& uid,
                        const std::string& gid);
  };
  static const File kFiles[] = {
      {"hostname", [](const std::string&, const protocol::BoxSetup& s, const std::string&, const std::string&) {
         return s.hostname + "\n";
       }},
      {"hosts", [](const std::string&, const protocol::BoxSetup& s, const std::string&, const std::string&) {
         return "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t" + s.hostname + "\n";
       }},
      {"resolv.conf", [](const std::string&, const protocol::BoxSetup&, const std::string&, const std::string&) {
         return std::string();
       }},
      {"passwd", [](const std::string& image, const protocol::BoxSetup& s, const std::string& u, const std::string& g) {
         return WithEntryFor(image, s.uid, "sandbox:x:" + u + ":" + g + ":sandbox:/tmp:/usr/sbin/nologin");
       }},
      {"group", [](const std::string& image, const protocol::BoxSetup& s, const std::string&, const std::string& g) {
         return WithEntryFor(image, s.gid, "sandbox:x:" + g + ":");
       }},
  };
  for (const auto& f : kFiles) {
    const std::string target = etc + "/" + f.name;
    bool present = false;
    LSB_ASSIGN_OR_RETURN(std::string image, ReadImageFile(target, &present));
    if (!present) continue;
    std::string text = f.make(image, setup, uid, gid);
    if (text == image) continue;  // nothing to add (the image names the box's user already)
    auto laid = LayOver(new_root, f.name, text, target);
    if (!laid.ok()) return laid.error().Wrap("the image's /etc/" + std::string(f.name));
  }
  return OkStatus();
}

}  // namespace lsb::init
