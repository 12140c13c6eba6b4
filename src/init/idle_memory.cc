#include "init/idle_memory.h"

#include <link.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace lsb::init {
namespace {

// The main program is the first object dl_iterate_phdr reports (in a static binary, the only one).
int DropReadOnlySegments(dl_phdr_info* info, size_t, void*) {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || (ph.p_flags & PF_W) || ph.p_memsz == 0) continue;
    // Only whole pages of the segment: a page it shares with a writable neighbour stays.
    uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    uintptr_t end = start + ph.p_memsz;
    start = (start + page - 1) & ~(page - 1);
    end &= ~(page - 1);
    if (end > start) (void)::madvise(reinterpret_cast<void*>(start), end - start, MADV_DONTNEED);
  }
  return 1;  // the main program only
}

}  // namespace

void ReleaseIdleMemory() {
  (void)::malloc_trim(0);
  (void)::dl_iterate_phdr(DropReadOnlySegments, nullptr);
}

}  // namespace lsb::init
