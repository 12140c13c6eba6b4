// What an idle init keeps resident (the BENCHMARKS.md target: llm-sandbox-init idle RSS <= 1 MiB).
//
// A pooled or session box spends most of its life with init blocked in poll() between frames. What
// it holds then is (a) anonymous memory: its heap, stack and written data, private to the box, and
// (b) page-table mappings of its own static binary's read-only pages (code and constants), which
// live once in the page cache and are shared by every box.
//
// ReleaseIdleMemory(), called when init goes idle (no frame for Supervisor::kIdleAfterMs, so a
// one-shot box, whose kRun follows kReady at once, never pays for it):
//  - returns the free parts of the heap to the kernel (malloc_trim: setup's JSON, the view's
//    paths and libseccomp's compile buffers are freed by then, but sit below live allocations);
//  - unmaps (MADV_DONTNEED) the PTEs of the binary's read-only PT_LOAD segments. This is safe
//    because those segments are never written (no text relocations: a static, non-PIE binary) so
//    the private mapping holds no copy-on-write pages; the next instruction fetch or read simply
//    maps the page again from the page cache (a minor fault: the pages stay cached, shared with the
//    other boxes). Writable segments (.data, .bss, RELRO) are never touched. Without it, the
//    kernel's fault-around maps 64 KiB per fault, so setup leaves nearly the whole binary mapped.
// Best effort: a failing madvise changes only what is resident, never behaviour.
#pragma once

namespace lsb::init {

void ReleaseIdleMemory();

}  // namespace lsb::init
