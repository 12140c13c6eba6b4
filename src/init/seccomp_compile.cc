#include "init/seccomp_compile.h"

#include <asm/prctl.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>

#include "base/unique_fd.h"
#include "protocol/escape_syscalls.h"

namespace lsb::init {
namespace {

struct CtxDeleter {
  void operator()(void* c) const { seccomp_release(c); }
};
using Ctx = std::unique_ptr<void, CtxDeleter>;

Status Rule(const Ctx& ctx, uint32_t action, const char* name, std::initializer_list<scmp_arg_cmp> args = {}) {
  int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) return OkStatus();  // not a syscall on this architecture
  int rc = seccomp_rule_add_array(ctx.get(), action, nr, static_cast<unsigned>(args.size()),
                                  args.size() ? args.begin() : nullptr);
  if (rc != 0) return Error{std::string("seccomp: rule for ") + name + ": " + std::strerror(-rc), -rc};
  return OkStatus();
}

Result<std::vector<sock_filter>> Export(const Ctx& ctx) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return Error::FromErrno("seccomp: pipe");
  UniqueFd r(p[0]), w(p[1]);
  int rc = seccomp_export_bpf(ctx.get(), w.get());
  if (rc != 0) return Error{std::string("seccomp: export BPF: ") + std::strerror(-rc), -rc};
  w.reset();
  std::string bytes;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(r.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::FromErrno("seccomp: read BPF");
    if (n == 0) break;
    bytes.append(buf, static_cast<size_t>(n));
  }
  if (bytes.empty() || bytes.size() % sizeof(sock_filter) != 0) return Error{"seccomp: bad BPF export"};
  std::vector<sock_filter> prog(bytes.size() / sizeof(sock_filter));
  std::memcpy(prog.data(), bytes.data(), bytes.size());
  return prog;
}

Result<Ctx> NewCtx(uint32_t def) {
  Ctx ctx(seccomp_init(def));
  if (!ctx) return Error{"seccomp: seccomp_init failed"};
  // Foreign-architecture calls (int 0x80, x32) are killed outright: no filter was written for them.
  seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 0);
  // A binary tree over syscall numbers instead of a linear list: fewer instructions per call, and
  // the kernel's per-syscall action cache, computed by running the filter for every number when it
  // is loaded, takes less time to build (each run's child loads it).
  seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2);
  return ctx;
}

// ---- Argument guards: a short hand-written prefix in front of libseccomp's program.
//
// libseccomp 2.5 takes one comparison per argument in a rule, so "refuse unless the argument is
// one of these values" and "refuse if any bit outside this mask is set" cannot be said with it.
// These few instructions say it; a call they do not decide falls through to libseccomp's program,
// which starts right after them (its jumps are relative, so prepending moves nothing inside it).

#if defined(__x86_64__)
constexpr uint32_t kNativeAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kNativeAuditArch = AUDIT_ARCH_AARCH64;
#else
#error "add this architecture's AUDIT_ARCH_* value"
#endif
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the guards read the low half of args[0] first");

// personality(2): the execution-domain values a program may ask for (Docker's default profile
// allows the same): PER_LINUX, PER_LINUX32, UNAME26 with either, and 0xffffffff (the query). The
// kernel takes an unsigned int, so only the low 32 bits are compared. Refused: ADDR_NO_RANDOMIZE
// (no ASLR), READ_IMPLIES_EXEC (PROT_READ maps become executable), MMAP_PAGE_ZERO, and the rest.
constexpr uint32_t kPersonalityAllowed[] = {0x0, 0x8, 0x20000, 0x20008, 0xffffffff};

// unshare(2) flags that make no namespace and share nothing new: a private fd table, fs info
// (cwd, root, umask), SysV semaphore undo list; CLONE_THREAD/SIGHAND/VM only succeed when nothing
// is shared. Any other bit, CLONE_NEW* or one the kernel does not know yet, is an escape attempt.
constexpr uint64_t kUnshareHarmless = CLONE_FILES | CLONE_FS | CLONE_SYSVSEM | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM;

struct GuardActions {
  bool personality = false;        // apply the personality allowlist (the escape program)
  uint32_t unshare_refused = 0;    // the action for an unshare with a namespace or unknown flag
};

std::vector<sock_filter> ArgumentGuards(const GuardActions& act) {
  constexpr uint32_t kArch = offsetof(seccomp_data, arch);
  constexpr uint32_t kNr = offsetof(seccomp_data, nr);
  constexpr uint32_t kArg0Lo = offsetof(seccomp_data, args[0]);
  constexpr uint32_t kArg0Hi = kArg0Lo + 4;
  // Jumps are written to labels and resolved once the code is laid out.
  enum Label : uint8_t { kNone, kPersonality, kUnshare, kRefuseUnshare, kAllow, kEnd };
  struct Insn {
    sock_filter f;
    Label jt = kNone, jf = kNone;
  };
  std::vector<Insn> code;
  uint32_t at[kEnd + 1] = {};
  auto op = [&](uint16_t c, uint32_t k) { code.push_back({BPF_STMT(c, k)}); };
  auto jump = [&](uint16_t c, uint32_t k, Label jt, Label jf) { code.push_back({BPF_JUMP(c, k, 0, 0), jt, jf}); };
  auto label = [&](Label l) { at[l] = static_cast<uint32_t>(code.size()); };

  op(BPF_LD | BPF_W | BPF_ABS, kArch);
  jump(BPF_JMP | BPF_JEQ | BPF_K, kNativeAuditArch, kNone, kEnd);
  op(BPF_LD | BPF_W | BPF_ABS, kNr);
  jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_personality, act.personality ? kPersonality : kEnd, kNone);
  jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, kUnshare, kEnd);
  if (act.personality) {
    label(kPersonality);
    op(BPF_LD | BPF_W | BPF_ABS, kArg0Lo);
    for (uint32_t v : kPersonalityAllowed) jump(BPF_JMP | BPF_JEQ | BPF_K, v, kAllow, kNone);
    op(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
  }
  label(kUnshare);
  op(BPF_LD | BPF_W | BPF_ABS, kArg0Lo);
  jump(BPF_JMP | BPF_JSET | BPF_K, static_cast<uint32_t>(~kUnshareHarmless), kRefuseUnshare, kNone);
  op(BPF_LD | BPF_W | BPF_ABS, kArg0Hi);
  jump(BPF_JMP | BPF_JSET | BPF_K, 0xffffffffu, kRefuseUnshare, kAllow);
  label(kRefuseUnshare);
  op(BPF_RET | BPF_K, act.unshare_refused);
  label(kAllow);
  op(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  label(kEnd);

  std::vector<sock_filter> out;
  for (size_t i = 0; i < code.size(); ++i) {
    sock_filter f = code[i].f;
    // A conditional jump's offsets count from the next instruction; kNone falls through.
    auto rel = [&](Label l) { return static_cast<uint8_t>(l == kNone ? 0 : at[l] - i - 1); };
    if (BPF_CLASS(f.code) == BPF_JMP) {
      f.jt = rel(code[i].jt);
      f.jf = rel(code[i].jf);
    }
    out.push_back(f);
  }
  return out;
}

Result<std::vector<sock_filter>> WithGuards(const GuardActions& act, Result<std::vector<sock_filter>> prog) {
  if (!prog.ok()) return prog;
  std::vector<sock_filter> out = ArgumentGuards(act);
  out.insert(out.end(), prog->begin(), prog->end());
  if (out.size() > BPF_MAXINSNS) return Error{"seccomp: program too long (" + std::to_string(out.size()) + " instructions)"};
  return out;
}

Result<std::vector<sock_filter>> BuildEscape(bool watched) {
  LSB_ASSIGN_OR_RETURN(Ctx ctx, NewCtx(SCMP_ACT_ALLOW));
  const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
  // TRACE ranks below the watch's USER_NOTIF: init answers (EPERM + alert); with no listener the
  // kernel refuses (ENOSYS). Without the watch these stay plain EPERM.
  const uint32_t escape = watched ? SCMP_ACT_TRACE(EPERM) : eperm;
  // unshare and personality are decided by argument in the guards (ArgumentGuards): never here.
  for (const char* name : protocol::kWatchedEscapeSyscalls)
    if (std::strcmp(name, "unshare") != 0) LSB_TRY(Rule(ctx, escape, name));
  for (const char* name : protocol::kRefusedSyscalls)
    if (!protocol::IsWatchedEscapeSyscall(name)) LSB_TRY(Rule(ctx, eperm, name));
  // clone3 passes its flags in memory a filter cannot read: ENOSYS makes libc fall back to clone.
  LSB_TRY(Rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3"));
  for (uint64_t f : {CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
                     CLONE_NEWPID, CLONE_NEWNET})
    LSB_TRY(Rule(ctx, eperm, "clone", {SCMP_A0(SCMP_CMP_MASKED_EQ, f, f)}));
  // fexecve of a memfd or any fd: execveat(fd, "", AT_EMPTY_PATH) names no path the watch could
  // check. Refused; with the watch, init refuses it (EPERM) and raises denied_exec.
  LSB_TRY(Rule(ctx, escape, "execveat", {SCMP_A4(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, AT_EMPTY_PATH)}));
  // ioctl's cmd is an unsigned int: compare the low 32 bits only, or high garbage slips past.
  for (uint64_t cmd : {0x5412ULL /* TIOCSTI */, 0x541CULL /* TIOCLINUX */})
    LSB_TRY(Rule(ctx, eperm, "ioctl", {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, cmd)}));
  // Signals to PID 1 (init): Linux drops them when sent from inside init's pid namespace, gVisor
  // delivers them (init, and the box with it, died). Refused everywhere. pid_t is 32 bits: compare
  // the low half only, so high garbage cannot slip a 1 past. The program runs in its own session,
  // so the process-group forms (kill(0), kill(-pgid)) never reach init.
  for (const char* call : {"kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open"})
    LSB_TRY(Rule(ctx, eperm, call, {SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffULL, 1)}));
  // A program's own USER_NOTIF listener would take precedence over ours for the calls we watch.
  LSB_TRY(Rule(ctx, eperm, "seccomp",
               {SCMP_A1(SCMP_CMP_MASKED_EQ, SECCOMP_FILTER_FLAG_NEW_LISTENER, SECCOMP_FILTER_FLAG_NEW_LISTENER)}));
  // Socket families: only AF_UNIX (1), AF_INET (2), AF_INET6 (10). Any value with high bits set is
  // >= 11 as a 64-bit number, so the kernel's int truncation cannot smuggle a family through.
  for (const char* call : {"socket", "socketpair"}) {
    LSB_TRY(Rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), call, {SCMP_A0(SCMP_CMP_EQ, 0)}));
    for (uint64_t fam = 3; fam <= 9; ++fam) LSB_TRY(Rule(ctx, eperm, call, {SCMP_A0(SCMP_CMP_EQ, fam)}));
    LSB_TRY(Rule(ctx, eperm, call, {SCMP_A0(SCMP_CMP_GE, 11)}));
    for (uint64_t type : {uint64_t{SOCK_RAW}, uint64_t{SOCK_PACKET}})
      LSB_TRY(Rule(ctx, eperm, call, {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, type)}));
  }
  return WithGuards(GuardActions{true, escape}, Export(ctx));
}

Result<std::vector<sock_filter>> BuildWatch(int handoff_fd, const SeccompOptions& opts) {
  LSB_ASSIGN_OR_RETURN(Ctx ctx, NewCtx(SCMP_ACT_ALLOW));
  for (const char* name : {"execve", "execveat", "connect", "sendto", "sendmmsg", "bind"})
    LSB_TRY(Rule(ctx, SCMP_ACT_NOTIFY, name));
  for (const char* name : protocol::kWatchedEscapeSyscalls)
    if (std::strcmp(name, "unshare") != 0) LSB_TRY(Rule(ctx, SCMP_ACT_NOTIFY, name));
#if defined(__x86_64__)
  // The check after exec (notify_watch.h): every new image sets its thread pointer once, from the
  // ELF interpreter's code (or a static binary's start code), before any code of the program runs.
  // arch_prctl's code is an int: the low 32 bits only.
  LSB_TRY(Rule(ctx, SCMP_ACT_NOTIFY, "arch_prctl", {SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffULL, ARCH_SET_FS)}));
#endif
  if (opts.trace_opens)
    for (const char* name : {"open", "openat", "openat2", "creat"}) LSB_TRY(Rule(ctx, SCMP_ACT_NOTIFY, name));
  LSB_TRY(Rule(ctx, SCMP_ACT_NOTIFY, "sendmsg",
               {SCMP_A0(SCMP_CMP_NE, static_cast<uint64_t>(handoff_fd))}));
  // unshare reaches init only with a namespace (or unknown) flag: CLONE_FS|CLONE_FILES run silently.
  return WithGuards(GuardActions{false, SECCOMP_RET_USER_NOTIF}, Export(ctx));
}

}  // namespace

Result<std::vector<sock_filter>> CompileZygoteFilter() {
  LSB_ASSIGN_OR_RETURN(Ctx ctx, NewCtx(SCMP_ACT_ALLOW));
  // What making a box takes: new namespaces (the interpreter's forks) and mounts (init in it).
  static const char* kNeeded[] = {"unshare", "mount", "umount2", "mount_setattr", "open_tree", "move_mount"};
  auto needed = [](const char* name) {
    for (const char* n : kNeeded)
      if (std::strcmp(n, name) == 0) return true;
    return false;
  };
  for (const char* name : protocol::kRefusedSyscalls) {
    if (needed(name)) continue;
    // TRACE for the watched ones: below a box's own watch (USER_NOTIF), so its program's attempt
    // still reaches init and raises the alert; ENOSYS here, where nothing traces.
    LSB_TRY(Rule(ctx, protocol::IsWatchedEscapeSyscall(name) ? SCMP_ACT_TRACE(EPERM) : SCMP_ACT_ERRNO(EPERM), name));
  }
  return Export(ctx);
}

Result<SeccompPrograms> CompileSeccompPrograms(int handoff_fd, SeccompOptions opts) {
  SeccompPrograms p;
  LSB_ASSIGN_OR_RETURN(p.escape, BuildEscape(opts.watched));
  // Without the watch (gVisor's weaker mode) its program is not even built: libseccomp refuses
  // SCMP_ACT_NOTIFY rules where the kernel has no user notification.
  if (opts.watched) {
    LSB_ASSIGN_OR_RETURN(p.watch, BuildWatch(handoff_fd, opts));
  }
  return p;
}

}  // namespace lsb::init
