// What init sends a fork server's program (pid 2 of a derived box, a fork of the zygote's python)
// so it confines itself (init/adopt.h -> liblsb-fork.so's lsb_adopt): one SOCK_SEQPACKET message,
// this header, then the watch filter's and the escape filter's instructions; the descriptors
// (stdin if any, stdout, stderr, the Landlock ruleset if any) ride along as SCM_RIGHTS.
#pragma once

#include <linux/filter.h>
#include <stdint.h>

namespace lsb::init {

inline constexpr uint32_t kAdoptMagic = 0x4c534246;  // "LSBF"
inline constexpr uint32_t kAdoptMaxFilter = 4096;     // instructions per filter (BPF_MAXINSNS)

struct AdoptWire {
  uint32_t magic = kAdoptMagic;
  uint32_t has_stdin = 0;
  uint32_t has_ruleset = 0;
  uint32_t uid = 1000;
  uint32_t gid = 1000;
  uint32_t watch_len = 0;   // 0: no watch (no listener)
  uint32_t escape_len = 0;  // 0: no escape filter
  uint32_t reserved = 0;
  uint64_t nofile = 256;
  uint64_t file_size = 0;
  char workdir[4096] = {};
};

inline constexpr unsigned long kAdoptMaxMessage = sizeof(AdoptWire) + 2 * kAdoptMaxFilter * sizeof(sock_filter);

// Why a program could not be confined (or execute): what init's spawn child and the adopted
// program write on the hand-off socket instead of the listener.
struct ChildReport {
  char tag;  // 'E' setup error, 'X' exec error
  int err;
  char what[120];
};

}  // namespace lsb::init
