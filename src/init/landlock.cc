#include "init/landlock.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <set>

namespace lsb::init {
namespace {

// Rights newer than the system headers (linux-libc-dev 6.1 stops at ABI 2).
constexpr uint64_t kAccessTruncate = 1ULL << 14;       // ABI 3
constexpr uint64_t kNetConnectTcp = 1ULL << 1;         // ABI 4
constexpr uint64_t kScopeAbstractUnix = 1ULL << 0;     // ABI 6
constexpr uint64_t kScopeSignal = 1ULL << 1;           // ABI 6

constexpr int kRuleNetPort = 2;                        // LANDLOCK_RULE_NET_PORT, ABI 4
struct NetPortAttr {  // struct landlock_net_port_attr
  uint64_t allowed_access;
  uint64_t port;
} __attribute__((packed));

struct RulesetAttr {  // struct landlock_ruleset_attr as of ABI 6
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

constexpr uint64_t kRead = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
constexpr uint64_t kExec = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE;
constexpr uint64_t kWriteTree =
    LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |
    LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
    LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |
    LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM |
    LANDLOCK_ACCESS_FS_REFER | kAccessTruncate;
constexpr uint64_t kFileOnly = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                               LANDLOCK_ACCESS_FS_READ_FILE | kAccessTruncate;

uint64_t HandledFs(int abi) {
  uint64_t h = kWriteTree | LANDLOCK_ACCESS_FS_EXECUTE;
  if (abi < 2) h &= ~LANDLOCK_ACCESS_FS_REFER;
  if (abi < 3) h &= ~kAccessTruncate;
  return h;
}

bool IsBinDir(const std::string& name) { return name == "bin" || name == "sbin" || name == "games"; }

// Every entry of `dir` except its bin dirs gets `access`: the libraries and data of /usr are
// readable while /usr/bin stays listable only.
void ReadableExceptBins(const std::string& dir, std::vector<LandlockRule>& out,
                        const std::set<std::string>& skip) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == ".." || IsBinDir(n) || skip.count(n)) continue;
    out.push_back({dir + "/" + n, kRead});
  }
  ::closedir(d);
}

}  // namespace

int LandlockAbi() {
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

std::vector<LandlockRule> PlanRules(const protocol::BoxSetup& setup, const ExecPolicy& exec) {
  std::vector<LandlockRule> rules;
  rules.push_back({"/", LANDLOCK_ACCESS_FS_READ_DIR});
  ReadableExceptBins("/usr", rules, {"local"});
  ReadableExceptBins("/usr/local", rules, {});
  for (const char* p : {"/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc"}) rules.push_back({p, kRead});
  for (const char* dev : {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"})
    rules.push_back({dev, LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | kAccessTruncate});
  rules.push_back({"/dev/shm", kWriteTree});
  for (const auto& t : setup.tmpfs) rules.push_back({t.path, kWriteTree});
  // container.mounts: the target only, never its parent (overlay: writable, ro: read).
  for (const auto& m : setup.mounts) rules.push_back({m.target, m.mode == "overlay" ? kWriteTree : kRead});
  rules.push_back({setup.job_dir, kRead});
  // container.build's files targets: read (and import), never write; exec only as allowed below.
  for (const auto& p : setup.readable)
    if (!p.empty() && p[0] == '/') rules.push_back({p, kRead});
  for (const auto& f : exec.allowed()) rules.push_back({f, kExec});
  for (const auto& f : exec.support()) rules.push_back({f, kExec});
  return rules;
}

Result<UniqueFd> CreateRuleset(int abi, const std::vector<LandlockRule>& rules, bool network_enabled,
                               uint16_t egress_port) {
  if (abi < 1) return Error{"commands: Landlock is not available in this kernel (needed to allow only the listed executables)"};
  RulesetAttr attr{};
  attr.handled_access_fs = HandledFs(abi);
  // Network off: no TCP connect at all; through the egress proxy: TCP connect to its port only.
  if (abi >= 4 && (!network_enabled || egress_port != 0)) attr.handled_access_net = kNetConnectTcp;
  if (abi >= 6) attr.scoped = kScopeAbstractUnix | kScopeSignal;
  size_t size = abi >= 6 ? sizeof(RulesetAttr) : abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
  UniqueFd ruleset(static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, size, 0)));
  if (!ruleset) return Error::FromErrno("commands: landlock_create_ruleset");
  if (attr.handled_access_net != 0 && egress_port != 0) {
    NetPortAttr np{kNetConnectTcp, egress_port};
    if (::syscall(SYS_landlock_add_rule, ruleset.get(), kRuleNetPort, &np, 0) != 0)
      return Error::FromErrno("network: landlock_add_rule for the egress proxy's port");
  }
  // A path-beneath rule must not name rights its target cannot have (READ_DIR on a file: EINVAL).
  for (const auto& r : rules) {
    int fd = ::open(r.path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) continue;  // absent in this root: nothing to grant
    UniqueFd owner(fd);
    struct stat st;
    if (::fstat(fd, &st) != 0) return Error::FromErrno("commands: stat " + r.path);
    landlock_path_beneath_attr pb{};
    pb.allowed_access = r.access & attr.handled_access_fs;
    if (!S_ISDIR(st.st_mode)) pb.allowed_access &= kFileOnly;
    if (pb.allowed_access == 0) continue;
    pb.parent_fd = fd;
    if (::syscall(SYS_landlock_add_rule, ruleset.get(), LANDLOCK_RULE_PATH_BENEATH, &pb, 0) != 0)
      return Error::FromErrno("commands: landlock_add_rule " + r.path);
  }
  return ruleset;
}

int RestrictSelf(int ruleset_fd) {
  return static_cast<int>(::syscall(SYS_landlock_restrict_self, ruleset_fd, 0));
}

}  // namespace lsb::init
