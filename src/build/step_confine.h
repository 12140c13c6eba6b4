// What confines a build step's own process (the package's build code: a setup.py, an apt
// maintainer script) beyond the build box's namespaces (docs/security.md "Build steps run in a
// box"). The box's confinement minus only what a package manager needs, each exception named here:
//   - capabilities: the bounding, permitted, effective and inheritable sets cut to
//     kBuildStepCapabilities (uid 0 of the box's user namespace keeps only those across exec);
//     ambient cleared;
//   - no_new_privs;
//   - seccomp: init's escape filter (src/init/seccomp_compile.h) unchanged, without the watch:
//     mount, namespaces, ptrace, bpf, keyctl, io_uring, module loading, memfd_create... EPERM;
//     sockets of AF_UNIX, AF_INET and AF_INET6 only, never SOCK_RAW or SOCK_PACKET (so no
//     AF_NETLINK at all: NETLINK_NETFILTER, the nf_tables surface, nor NETLINK_ROUTE; glibc's
//     getaddrinfo then assumes both address families, as in every box).
// Exceptions to the box: uid 0 (dpkg and pip write as root), the capabilities below, no Landlock
// (the root is the step's to write) and no exec watch (a build runs any program of its image).
#pragma once

#include <linux/capability.h>
#include <linux/filter.h>

#include <string>
#include <vector>

namespace lsb::build {

// What dpkg, apt and pip do as root with real packages (the build suite's own apt package and
// wheel build with none of them: measured, docs/security.md), the same six the Docker builder
// keeps (docker_builder.cc):
//   CAP_CHOWN        dpkg gives unpacked files their owners (root:root, and groups such as
//                    shadow, mail, utmp);
//   CAP_DAC_OVERRIDE writing into directories and files of modes that exclude root's own bits
//                    (0555 dirs, 0444 files) as dpkg and pip do;
//   CAP_FOWNER       chmod/utime on files the step did not create (copied-up image files);
//   CAP_FSETID       dpkg's setgid binaries keep their bit when the group is not the step's own;
//   CAP_SETUID/SETGID maintainer scripts that switch to a system user (su, runuser, setpriv)
//                    within the box's own id range.
// Everything else (CAP_NET_ADMIN, CAP_NET_RAW, CAP_SYS_ADMIN, CAP_SYS_CHROOT, CAP_SYS_PTRACE,
// CAP_SETPCAP, CAP_SETFCAP, CAP_MKNOD, CAP_KILL, ...) is gone.
inline constexpr int kBuildStepCapabilities[] = {CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID,
                                                 CAP_SETUID, CAP_SETGID};

// The seccomp program of a step, compiled once in the step runner before it forks; "" on success,
// else why it could not be made (the step must not run then).
std::string CompileStepFilter(std::vector<sock_filter>* out);

// In the step's child, right before exec: capabilities, no_new_privs, then `filter`. Returns ""
// or what failed (the child must not exec then).
std::string ConfineStep(const std::vector<sock_filter>& filter);

}  // namespace lsb::build
