// The system calls a sandboxed program is refused because escapes are made of them, shared by
// llm-sandbox-init (its seccomp filters) and the Docker backend (the engine-level profile, which
// must let the watched ones reach init's filter: an engine ERRNO outranks init's USER_NOTIF, and
// the escape_syscall alert would never be raised).
#pragma once

#include <cstring>

namespace lsb::protocol {

// Refused with EPERM and reported (rule escape_syscall, with the call's name) when the watch runs.
inline constexpr const char* kWatchedEscapeSyscalls[] = {
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "ptrace", "bpf", "init_module",
    "finit_module", "delete_module", "kexec_load", "kexec_file_load", "open_by_handle_at",
    "process_vm_readv", "process_vm_writev", "keyctl", "add_key", "request_key"};

// Refused with EPERM, silently: kernel attack surface, host-wide state, or ways around the watch.
// Includes the watched ones (refused as plain EPERM when the watch is off). modify_ldt: 16-bit
// segments, a past source of kernel bugs; Docker's default profile refuses it too. Two more are
// narrowed by argument in init's filters (seccomp_compile.cc): personality (only PER_LINUX,
// PER_LINUX32, UNAME26 and the query) and unshare (only when it makes no namespace).
inline constexpr const char* kRefusedSyscalls[] = {
    "mount", "umount", "umount2", "pivot_root", "chroot", "unshare", "setns", "ptrace",
    "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp", "pidfd_getfd", "bpf",
    "keyctl", "add_key", "request_key", "perf_event_open", "userfaultfd", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "open_by_handle_at", "name_to_handle_at",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "memfd_create", "memfd_secret", "swapon", "swapoff", "reboot", "acct", "syslog",
    "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    "quotactl", "quotactl_fd", "lookup_dcookie", "vhangup", "iopl", "ioperm", "modify_ldt", "fanotify_init",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    "uselib", "nfsservctl", "_sysctl", "vm86", "vm86old", "create_module", "get_kernel_syms",
    "query_module", "ustat", "sysfs"};

inline bool IsWatchedEscapeSyscall(const char* name) {
  for (const char* w : kWatchedEscapeSyscalls)
    if (std::strcmp(w, name) == 0) return true;
  return false;
}

inline bool IsRefusedSyscall(const char* name) {
  for (const char* r : kRefusedSyscalls)
    if (std::strcmp(r, name) == 0) return true;
  return false;
}

}  // namespace lsb::protocol
