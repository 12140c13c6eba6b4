#include "init/host_etc.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/io.h"
#include "base/unique_fd.h"
#include "init/mounts.h"

namespace lsb::init {
namespace {

bool Allowed(const std::string& name) {
  for (const auto& a : HostEtcAllowList()) {
    if (!a.empty() && a.back() == '*') {
      if (name.compare(0, a.size() - 1, a, 0, a.size() - 1) == 0) return true;
    } else if (name == a) {
      return true;
    }
  }
  return false;
}

// Small files are copied into the new root (a read and a write, ~10 us) rather than bound (a
// mount and its mount_setattr, ~70 us): a box start pays for each. The copies live on the root's
// tmpfs (1 MiB), hence the budget; anything larger, and every directory, is bound read-only.
constexpr off_t kCopyMaxFile = 128 * 1024;
constexpr off_t kCopyBudget = 384 * 1024;

Status WriteNew(const std::string& path, const std::string& text);

// Copies regular file `src` to `dst` when it fits; false (nothing done) when it should be bound.
Result<bool> CopySmall(const std::string& src, const std::string& dst, off_t* budget) {
  UniqueFd in(::open(src.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!in) return false;  // a symlink or unreadable: PlaceReadOnly decides
  struct stat st;
  if (::fstat(in.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > kCopyMaxFile || st.st_size > *budget)
    return false;
  std::string data(static_cast<size_t>(st.st_size), '\0');
  LSB_TRY(ReadExact(in.get(), data.data(), data.size()));
  LSB_TRY(WriteNew(dst, data));
  *budget -= st.st_size;
  return true;
}

// A directory of a few small regular files (python3.11/, ld.so.conf.d/...) is copied the same
// way; false (nothing done) for anything else, which is then bound.
constexpr size_t kCopyMaxEntries = 16;

Result<bool> CopySmallDir(const std::string& src, const std::string& dst, off_t* budget) {
  DIR* dir = ::opendir(src.c_str());
  if (!dir) return false;
  std::vector<std::string> files;
  off_t total = 0;
  bool small = true;
  while (dirent* e = ::readdir(dir)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    struct stat st;
    if (files.size() >= kCopyMaxEntries || ::lstat((src + "/" + n).c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_size > kCopyMaxFile) {
      small = false;
      break;
    }
    total += st.st_size;
    files.push_back(n);
  }
  ::closedir(dir);
  if (!small || total > *budget) return false;
  if (::mkdir(dst.c_str(), 0755) != 0) return Error::FromErrno("mkdir " + dst);
  for (const auto& f : files) {
    LSB_ASSIGN_OR_RETURN(bool copied, CopySmall(src + "/" + f, dst + "/" + f, budget));
    if (!copied) return Error{"copy " + src + "/" + f + " into the box's /etc: it changed while being copied"};
  }
  return true;
}

Status WriteNew(const std::string& path, const std::string& text) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd) return Error::FromErrno("create " + path);
  return WriteAll(fd.get(), text);
}

}  // namespace

const std::vector<std::string>& HostEtcAllowList() {
  // Measured (strace -e trace=%file) for python3 (ssl, json, urllib, socket, locale, subprocess,
  // multiprocessing, sqlite3, mimetypes, platform, zoneinfo, getpass), pip, bash and node, plus
  // the targets of symlinks from /usr into /etc (alternatives, ssl, sitecustomize, locale.alias,
  // java). Nothing here names a host, holds a secret or a credential.
  static const std::vector<std::string> kList = {
      "alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "ssl", "ca-certificates.conf",
      "python3*", "localtime", "timezone", "mime.types", "os-release", "debian_version",
      "protocols", "services", "host.conf", "gai.conf", "locale.alias", "locale.gen", "magic",
      "magic.mime", "terminfo", "fonts", "matplotlibrc", "java-*", "bash.bashrc", "inputrc",
      "shells", "login.defs",
  };
  return kList;
}

Status BuildHostEtc(const std::string& new_root, const protocol::BoxSetup& setup) {
  const std::string etc = new_root + "/etc";
  if (::mkdir(etc.c_str(), 0755) != 0 && errno != EEXIST) return Error::FromErrno("mkdir " + etc);
  DIR* dir = ::opendir("/etc");
  if (!dir) return Error::FromErrno("list the host's /etc");
  std::vector<std::string> names;
  while (dirent* e = ::readdir(dir)) {
    std::string n = e->d_name;
    if (n != "." && n != ".." && Allowed(n)) names.push_back(n);
  }
  ::closedir(dir);
  off_t budget = kCopyBudget;
  auto place = [&](const std::string& rel) -> Status {
    LSB_ASSIGN_OR_RETURN(bool copied, CopySmall("/etc/" + rel, etc + "/" + rel, &budget));
    if (copied) return OkStatus();
    LSB_ASSIGN_OR_RETURN(copied, CopySmallDir("/etc/" + rel, etc + "/" + rel, &budget));
    if (copied) return OkStatus();
    return PlaceReadOnly("/etc/" + rel, etc + "/" + rel);
  };
  for (const auto& n : names) {
    // ssl: the certificates and openssl.cnf, never ssl/private.
    if (n == "ssl") {
      LSB_TRY(MakeDirs(etc + "/ssl"));
      for (const char* sub : {"certs", "openssl.cnf"}) LSB_TRY(place(std::string("ssl/") + sub));
      continue;
    }
    LSB_TRY(place(n));
  }
  const std::string user = "sandbox", uid = std::to_string(setup.uid), gid = std::to_string(setup.gid);
  std::string passwd = "root:x:0:0:root:/root:/usr/sbin/nologin\n";
  std::string group = "root:x:0:\n";
  if (setup.uid != 65534) passwd += user + ":x:" + uid + ":" + gid + ":" + user + ":/tmp:/usr/sbin/nologin\n";
  if (setup.gid != 65534) group += user + ":x:" + gid + ":\n";
  passwd += "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
  group += "nogroup:x:65534:\n";
  LSB_TRY(WriteNew(etc + "/passwd", passwd));
  LSB_TRY(WriteNew(etc + "/group", group));
  LSB_TRY(WriteNew(etc + "/hostname", setup.hostname + "\n"));
  LSB_TRY(WriteNew(etc + "/hosts", "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t" +
                                       setup.hostname + "\n"));
  LSB_TRY(WriteNew(etc + "/resolv.conf", ""));
  // Files only: the host's may name sss/ldap/systemd modules that would try to reach daemons.
  LSB_TRY(WriteNew(etc + "/nsswitch.conf",
                   "passwd: files\ngroup: files\nshadow: files\nhosts: files\nnetworks: files\n"
                   "protocols: files\nservices: files\nethers: files\nrpc: files\n"));
  if (::symlink("../proc/self/mounts", (etc + "/mtab").c_str()) != 0) return Error::FromErrno("symlink /etc/mtab");
  return OkStatus();
}

}  // namespace lsb::init
